// Sign in with an API key: the service key (every tenant) or a tenant key (its tenant, its role).
// The key is posted once to /ui/session, which checks it as the API does and starts a server-side
// session: the HttpOnly cookie holds only that session's random secret, never the key; the key is
// never put in the URL, in a cookie or in storage.

import { api, ApiError } from "../api.js";
import { field, h } from "../dom.js";

export async function render(main, ctx) {
  const input = h("input", { type: "password", name: "key", autocomplete: "current-password", required: true, spellcheck: "false" });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    {
      class: "card signin",
      "aria-labelledby": "signin-title",
      onsubmit: async (event) => {
        event.preventDefault();
        error.hidden = true;
        button.disabled = true;
        try {
          await api("POST", "/ui/session", { json: { key: input.value.trim() }, allow401: true });
          input.value = "";
          await ctx.refreshSession();
          ctx.navigate(ctx.query.get("next") || "/datasets");
        } catch (err) {
          error.textContent = err instanceof ApiError && err.status === 401 ? "That key is not valid (or it was revoked)." : err instanceof ApiError ? err.describe() : String(err);
          error.hidden = false;
          input.focus();
        } finally {
          button.disabled = false;
        }
      },
    },
    h("h1", { id: "signin-title" }, "Sign in to ragd"),
    h("p", {}, "Use the service key (RAGD_SERVER__API_KEY) to see every tenant, or a tenant key (rgd_…) to see your tenant with its role."),
    field("API key", input, "Kept in a cookie that scripts cannot read, only for this site; signing out clears it."),
    error,
    h("div", { class: "actions" }, button),
  );
  main.append(form);
  input.focus();
}

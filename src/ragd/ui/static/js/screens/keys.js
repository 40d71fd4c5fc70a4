// Keys (admins): tenants (the service key creates them; a tenant admin sees only its own) and,
// per tenant, its API keys: create one (its secret is shown once, in a dialog, never stored),
// revoke one; and the web UI sessions signed in with them (created, last seen, expires, browser),
// each revocable. GET/POST /api/v1/tenants, GET/POST /api/v1/tenants/{id}/keys, DELETE …/keys/{key},
// GET /api/v1/tenants/{id}/sessions, DELETE …/sessions/{session}; the service key's own sessions:
// GET/DELETE /api/v1/sessions.

import { api, ApiError } from "../api.js";
import { badge, confirmDialog, dataTable, field, fmtTime, h, replace, toast } from "../dom.js";

const ROLE_PATTERN = "[A-Za-z0-9][A-Za-z0-9_.\\-]*";
const ROLES = [
  ["admin", "manages the tenant: its keys, datasets, files and sources"],
  ["editor", "manages datasets and files (not sources, not keys)"],
  ["reader", "reads and searches the datasets open to all roles or naming “reader”"],
];

const describe = (err) => (err instanceof ApiError ? err.describe() : String(err && err.message ? err.message : err));

export async function render(main, ctx) {
  const { session, signal } = ctx;
  if (!session.can_admin) {
    main.append(h("h1", {}, "Keys"), h("p", {}, "Managing keys needs an admin key of a tenant, or the service key."));
    return;
  }
  let tenants = (await api("GET", "/api/v1/tenants", { signal })).tenants || [];
  const wanted = ctx.query.get("tenant");
  let selected = tenants.find((t) => t.id === wanted) || (session.service ? null : tenants[0]) || null;
  const panel = h("section", { class: "keys-panel", "aria-labelledby": "keys-title" });

  const select = (tenant) => {
    selected = tenant;
    history.replaceState(null, "", tenant && session.service ? `#/keys?tenant=${encodeURIComponent(tenant.id)}` : "#/keys");
    tenantTable.setRows(tenants); // marks the selected row
    drawPanel().catch((err) => replace(panel, h("p", { class: "error", role: "alert" }, describe(err))));
  };

  const drawPanel = async () => {
    if (!selected) {
      replace(panel, h("h2", { id: "keys-title" }, "Tenant keys"), h("p", { class: "muted" }, "Choose a tenant to see and manage its keys."));
      return;
    }
    await keysPanel(panel, selected, { session, signal });
  };

  const tenantTable = dataTable(
    [
      { key: "name", label: "Tenant", render: (t) => h("span", { class: "tenant-name" }, t.name) },
      { key: "id", label: "Id", render: (t) => h("code", { class: "tenant-id" }, t.id) },
      { key: "created_at", label: "Created", render: (t) => fmtTime(t.created_at) },
      {
        key: "manage",
        label: "Keys",
        sortable: false,
        render: (t) =>
          t === selected || (selected && t.id === selected.id)
            ? h("span", { class: "badge badge-selected", "aria-current": "true" }, "shown below")
            : h("button", { type: "button", class: "small", "aria-label": `Manage keys of ${t.name}`, onclick: () => select(t) }, "Manage keys"),
      },
    ],
    tenants,
    { caption: "Tenants", empty: "No tenants yet: create one." },
  );
  tenantTable.classList.add("tenants-table");

  const parts = [h("h1", {}, "Keys")];
  if (session.service) {
    parts.push(
      h("p", { class: "muted admin-lead" }, "Tenants own datasets; each tenant's keys carry a role. Secrets are shown once and stored only as hashes."),
      tenantForm(async (tenant) => {
        tenants = [...tenants, tenant];
        select(tenant);
      }),
      h("div", { class: "table-scroll" }, tenantTable),
    );
  } else {
    parts.push(h("p", { class: "muted admin-lead" }, `The keys of your tenant, ${selected ? selected.name : "–"}. Secrets are shown once and stored only as hashes.`));
  }
  parts.push(panel);
  const own = session.service ? h("section", { class: "keys-panel service-sessions", "aria-labelledby": "service-sessions-title" }) : null;
  if (own) parts.push(own);
  main.append(...parts);
  await drawPanel();
  if (own) {
    const table = sessionsTable("/api/v1/sessions", "Sessions signed in with the service key", () => "service key", session);
    replace(own, h("h2", { id: "service-sessions-title" }, "Service key sessions"), h("div", { class: "table-scroll" }, table));
    await table.refresh(signal);
  }
}

/**
 * The live web UI sessions at `path` (a tenant's, or the service key's own): who signed in (`keyLabel`),
 * when, last seen, until when, from which browser; Revoke ends one at once (its cookie stops working).
 */
function sessionsTable(path, caption, keyLabel, me, onChange) {
  const table = dataTable(
    [
      { key: "key_id", label: "Key", sort: (s) => keyLabel(s), render: (s) => keyLabel(s) },
      { key: "created_at", label: "Signed in", render: (s) => fmtTime(s.created_at) },
      { key: "last_seen_at", label: "Last seen", render: (s) => fmtTime(s.last_seen_at, { relative: true }) },
      { key: "expires_at", label: "Expires", render: (s) => fmtTime(s.expires_at) },
      {
        key: "user_agent",
        label: "Browser",
        render: (s) => h("span", { class: "user-agent", title: s.user_agent || "" }, s.user_agent || "–", s.id === mySession(me) ? h("span", { class: "badge" }, "this session") : null),
      },
      {
        key: "revoke",
        label: "Actions",
        sortable: false,
        render: (s) => h("button", { type: "button", class: "small danger", "aria-label": `Revoke the session of ${keyLabel(s)} signed in ${fmtTime(s.created_at)}`, onclick: () => revoke(s) }, "Revoke"),
      },
    ],
    [],
    { caption, empty: "No one is signed in." },
  );
  table.classList.add("sessions-table");
  let lastSignal;
  table.refresh = async (signal) => {
    lastSignal = signal || lastSignal;
    table.setRows((await api("GET", path, { signal: lastSignal })).sessions || []);
  };
  const revoke = async (s) => {
    const mine = s.id === mySession(me);
    const note = mine ? " It is this session: you will be signed out." : " That browser is signed out at once.";
    if (!(await confirmDialog(`Revoke the session of ${keyLabel(s)} signed in ${fmtTime(s.created_at)}?${note}`, { confirm: "Revoke" }))) return;
    try {
      await api("DELETE", `${path}/${encodeURIComponent(s.id)}`);
      toast("Revoked the session.", "ok");
    } catch (err) {
      toast(describe(err), "error");
    }
    if (mine) {
      location.reload();
      return;
    }
    if (onChange) await onChange(); // the keys' counts first: the row's going says all is redrawn
    await table.refresh();
  };
  return table;
}

const mySession = (me) => (me && me.session ? me.session.id : null);

function tenantForm(onCreated) {
  const name = h("input", { type: "text", name: "tenant-name", required: true, maxlength: 200, autocomplete: "off" });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const button = h("button", { type: "submit", class: "primary" }, "Create tenant");
  return h(
    "form",
    {
      class: "card inline-form tenant-form",
      "aria-label": "New tenant",
      onsubmit: async (event) => {
        event.preventDefault();
        error.hidden = true;
        button.disabled = true;
        try {
          const tenant = await api("POST", "/api/v1/tenants", { json: { name: name.value.trim() } });
          name.value = "";
          toast(`Created the tenant “${tenant.name}”.`, "ok");
          await onCreated(tenant);
        } catch (err) {
          error.textContent = describe(err);
          error.hidden = false;
          name.focus();
        } finally {
          button.disabled = false;
        }
      },
    },
    h("h2", {}, "New tenant"),
    h("div", { class: "form-line" }, field("Tenant name", name), h("div", { class: "actions" }, button)),
    error,
  );
}

async function keysPanel(panel, tenant, { session, signal }) {
  const path = `/api/v1/tenants/${encodeURIComponent(tenant.id)}/keys`;
  const load = async () => (await api("GET", path, { signal })).keys || [];
  const table = dataTable(
    [
      { key: "name", label: "Name", render: (k) => k.name || h("span", { class: "muted" }, "(no name)") },
      { key: "role", label: "Role", render: (k) => badge(k.role) },
      { key: "prefix", label: "Key starts", render: (k) => h("code", {}, `${k.prefix}…`) },
      { key: "created_at", label: "Created", render: (k) => fmtTime(k.created_at) },
      { key: "sessions", label: "UI sessions", render: (k) => String(k.sessions ?? 0) },
      {
        key: "revoke",
        label: "Actions",
        sortable: false,
        render: (k) =>
          h(
            "button",
            { type: "button", class: "small danger", "aria-label": `Revoke ${k.name || k.prefix} (${k.role})`, onclick: () => revoke(k) },
            "Revoke",
          ),
      },
    ],
    [],
    { caption: `Keys of ${tenant.name}`, empty: "No keys yet." },
  );
  table.classList.add("keys-table");

  let keys = [];
  const keyLabel = (s) => {
    const k = keys.find((x) => x.id === s.key_id);
    return k ? `${k.name || `${k.prefix}…`} (${k.role})` : `a revoked key (${s.role})`;
  };
  const sessions = sessionsTable(`/api/v1/tenants/${encodeURIComponent(tenant.id)}/sessions`, `Web UI sessions of ${tenant.name}`, keyLabel, session, async () => {
    keys = await load();
    table.setRows(keys);
  });
  const refresh = async () => {
    keys = await load();
    table.setRows(keys);
    await sessions.refresh(signal);
  };
  const revoke = async (k) => {
    const who = k.name ? `“${k.name}”` : `${k.prefix}…`;
    const own = session.service ? "" : " If it is the key you signed in with, you will be signed out.";
    if (!(await confirmDialog(`Revoke the ${k.role} key ${who} of ${tenant.name}? Anything using it stops working at once.${own}`, { confirm: "Revoke" }))) return;
    try {
      await api("DELETE", `${path}/${encodeURIComponent(k.id)}`);
      toast(`Revoked the key ${who}.`, "ok");
    } catch (err) {
      toast(describe(err), "error");
    }
    await refresh();
  };

  replace(
    panel,
    h("h2", { id: "keys-title" }, "Keys of ", h("span", { class: "tenant-name" }, tenant.name)),
    keyForm(path, tenant, { signal, onCreated: refresh }),
    h("div", { class: "table-scroll" }, table),
    h("h3", {}, "Web UI sessions"),
    h("p", { class: "muted" }, "Each sign-in to this UI with one of these keys. Revoking a session signs that browser out; revoking a key ends its sessions too."),
    h("div", { class: "table-scroll" }, sessions),
  );
  await refresh();
}

function keyForm(path, tenant, { signal, onCreated }) {
  const listId = `roles-${tenant.id}`;
  const role = h("input", {
    type: "text",
    name: "role",
    required: true,
    maxlength: 64,
    pattern: ROLE_PATTERN,
    list: listId,
    autocomplete: "off",
    spellcheck: "false",
    value: "reader",
  });
  const name = h("input", { type: "text", name: "key-name", maxlength: 200, autocomplete: "off", placeholder: "e.g. HR portal" });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const button = h("button", { type: "submit", class: "primary" }, "Create key");
  return h(
    "form",
    {
      class: "card inline-form key-form",
      "aria-label": `New key for ${tenant.name}`,
      onsubmit: async (event) => {
        event.preventDefault();
        error.hidden = true;
        button.disabled = true;
        try {
          const made = await api("POST", path, { json: { role: role.value.trim(), name: name.value.trim() } });
          name.value = "";
          button.disabled = false; // focus comes back to it when the dialog closes
          await onCreated();
          await secretDialog(made.key, made.secret, tenant, signal);
          if (!signal.aborted) button.focus();
        } catch (err) {
          error.textContent = describe(err);
          error.hidden = false;
          role.focus();
        } finally {
          button.disabled = false;
        }
      },
    },
    h("h3", {}, "New key"),
    h(
      "div",
      { class: "form-line" },
      field("Role", role, "admin, editor, reader, or any role name your datasets allow"),
      field("Name", name, "optional: who or what uses it"),
      h("div", { class: "actions" }, button),
    ),
    h("datalist", { id: listId }, ROLES.map(([r, what]) => h("option", { value: r, label: what }))),
    h("ul", { class: "role-help muted" }, ROLES.map(([r, what]) => h("li", {}, h("strong", {}, r), `: ${what}`)), h("li", {}, h("strong", {}, "other names"), ": read the datasets whose allowed roles name them")),
    error,
  );
}

/**
 * The new key's secret, once: a modal with Copy and a plain warning. Closing it (Done, Escape,
 * leaving the screen) removes the dialog and the secret with it; nothing keeps a copy.
 */
function secretDialog(key, secret, tenant, signal) {
  return new Promise((resolve) => {
    const output = h("input", { type: "text", readonly: true, class: "secret mono", value: secret, spellcheck: "false", "aria-describedby": "secret-note" });
    const copied = h("p", { class: "copy-state", role: "status", "aria-live": "polite" });
    const copy = async () => {
      try {
        if (!navigator.clipboard || !window.isSecureContext) throw new Error("no clipboard");
        await navigator.clipboard.writeText(output.value);
        copied.textContent = "Copied to the clipboard.";
      } catch {
        output.focus();
        output.select();
        copied.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
      }
    };
    const dialog = h(
      "dialog",
      { class: "secret-dialog", "aria-labelledby": "secret-title" },
      h("h2", { id: "secret-title" }, "New ", key.role, " key for ", tenant.name),
      h("p", { id: "secret-note", class: "secret-note" }, h("strong", {}, "Copy it now: you will not see it again."), " ragd keeps only a hash of it; if it is lost, revoke it and create another."),
      field("Secret", output),
      copied,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "primary", onclick: copy }, "Copy"),
        h("button", { type: "button", onclick: () => dialog.close() }, "Done"),
      ),
    );
    const gone = () => dialog.open && dialog.close();
    signal.addEventListener("abort", gone);
    dialog.addEventListener("close", () => {
      signal.removeEventListener("abort", gone);
      output.value = "";
      dialog.remove();
      resolve();
    });
    document.body.append(dialog);
    dialog.showModal();
    output.select();
  });
}

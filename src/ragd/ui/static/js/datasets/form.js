// The dataset form (create and edit) in a modal dialog: name, description, tenant (service key),
// chunking, allowed roles, dense model and reranker when the server offers a choice.

import { api, ApiError } from "../api.js";
import { field, h } from "../dom.js";

const STRATEGIES = [
  ["", "server default"],
  ["token", "token (tokens)"],
  ["markdown", "markdown (tokens, by headings)"],
  ["sentence", "sentence (characters)"],
  ["recursive", "recursive (characters)"],
  ["manual", "manual (characters)"],
];

function select(name, options, value) {
  return h(
    "select",
    { name },
    options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)),
  );
}

function numberInput(name, value) {
  return h("input", { type: "number", name, min: 0, step: 1, inputmode: "numeric", value: value ?? "" });
}

/** Roles typed as "hr, legal" → ["hr", "legal"]. */
export function parseRoles(text) {
  return [...new Set(text.split(/[,\s]+/).map((r) => r.trim()).filter(Boolean))];
}

/**
 * Open the form; resolves with the saved dataset, or null when cancelled.
 * existing: the dataset to edit (null: create). caps: /api/v1/system capabilities or null.
 * tenants: the tenants the service key may choose from (null for a tenant key).
 */
export function datasetDialog({ existing, caps, tenants }) {
  return new Promise((resolve) => {
    const d = existing || {};
    const chunking = d.chunking || {};
    const locked = Boolean(existing && d.files > 0);
    const name = h("input", { type: "text", name: "name", required: true, maxlength: 200, value: d.name || "", autocomplete: "off" });
    const description = h("textarea", { name: "description", maxlength: 10000, rows: 3 }, d.description || "");
    const strategy = select("strategy", STRATEGIES, chunking.strategy || "");
    const size = numberInput("size", chunking.size);
    const overlap = numberInput("overlap", chunking.overlap);
    const roles = h("input", { type: "text", name: "roles", value: (d.allowed_roles || []).join(", "), autocomplete: "off", placeholder: "hr, legal" });
    const embedders = (caps && caps.embedders) || [];
    const embedding = embedders.length > 1 ? select("embedding", embedders.map((m) => [m, m]), d.embedding || embedders[0]) : null;
    const rerankers = (caps && caps.rerankers) || [];
    const reranker = rerankers.length
      ? select("reranker", [["default", "default"], ["none", "none"], ...rerankers.map((r) => [r, r])], d.reranker || "default")
      : null;
    const tenant = !existing && tenants ? select("tenant", tenants.map((t) => [t.id, t.name]), tenants[0] && tenants[0].id) : null;
    const newTenant = tenant && !tenants.length ? h("input", { type: "text", name: "tenant_name", required: true, autocomplete: "off" }) : null;
    const error = h("p", { class: "error", role: "alert" });
    const save = h("button", { type: "submit", class: "primary" }, existing ? "Save" : "Create");
    const lockHint = locked
      ? `Fixed now that the dataset has ${d.files === 1 ? "a file" : "files"}: the server refuses a change. Create a new dataset for other chunking, or delete its files first.`
      : null;
    if (locked) {
      // what the server would refuse is not offered: shown, but not editable
      for (const control of [strategy, size, overlap, embedding]) if (control) control.disabled = true;
      for (const control of [strategy, size, overlap]) control.setAttribute("aria-describedby", "chunking-locked");
    }

    const form = h(
      "form",
      { class: "dataset-form", method: "dialog" },
      h("h2", { id: "dataset-form-title" }, existing ? `Edit “${d.name}”` : "New dataset"),
      field("Name", name),
      field("Description", description),
      newTenant
        ? field("New tenant", newTenant, "No tenant exists yet: this one is created with the dataset.")
        : tenant
          ? field("Tenant", tenant, "The service key creates datasets for a tenant.")
          : null,
      field("Allowed roles", roles, "Comma-separated. Empty: every key of the tenant may read it."),
      h(
        "fieldset",
        { class: ["chunking", locked ? "locked" : null] },
        h("legend", {}, "Chunking"),
        lockHint ? h("p", { class: "hint", id: "chunking-locked" }, lockHint) : null,
        h("div", { class: "form-row" }, field("Strategy", strategy), field("Size", size), field("Overlap", overlap)),
      ),
      embedding ? field("Embedding model", embedding, locked ? "Fixed now that the dataset has files." : "The dense model its files are embedded with; fixed once it has files.") : null,
      reranker ? field("Reranker", reranker) : null,
      error,
      h("div", { class: "actions" }, save, h("button", { type: "button", onclick: () => dialog.close() }, "Cancel")),
    );
    const dialog = h("dialog", { class: "dataset-dialog", "aria-labelledby": "dataset-form-title" }, form);
    let saved = null;

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      error.textContent = "";
      save.disabled = true;
      try {
        saved = await submit();
        dialog.close();
      } catch (err) {
        error.textContent = err instanceof ApiError ? err.describe() : String(err.message || err);
      } finally {
        save.disabled = false;
      }
    });

    async function submit() {
      const body = { name: name.value.trim(), description: description.value, allowed_roles: parseRoles(roles.value) };
      const wanted = {
        strategy: strategy.value || null,
        size: size.value === "" ? null : Number(size.value),
        overlap: overlap.value === "" ? null : Number(overlap.value),
      };
      const changed = ["strategy", "size", "overlap"].some((k) => (wanted[k] ?? null) !== (chunking[k] ?? null));
      if (!existing || changed) {
        const spec = Object.fromEntries(Object.entries(wanted).filter(([, v]) => v !== null));
        if (Object.keys(spec).length || existing) body.chunking = spec;
      }
      if (embedding && (!existing || embedding.value !== (d.embedding || "default"))) body.embedding = embedding.value;
      if (reranker && (!existing || reranker.value !== (d.reranker || "default"))) body.reranker = reranker.value;
      if (existing) return api("PATCH", `/api/v1/datasets/${encodeURIComponent(d.id)}`, { json: body });
      if (newTenant) {
        const made = await api("POST", "/api/v1/tenants", { json: { name: newTenant.value.trim() } });
        body.tenant_id = made.id;
      } else if (tenant) {
        body.tenant_id = tenant.value;
      }
      return api("POST", "/api/v1/datasets", { json: body });
    }

    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(saved);
    });
    document.body.append(dialog);
    dialog.showModal();
    name.focus();
  });
}

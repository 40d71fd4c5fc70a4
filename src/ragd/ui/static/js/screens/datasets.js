// Datasets: the list with counts, status and last update; search it; create, edit, delete.

import { api, ApiError } from "../api.js";
import { capabilities } from "../capabilities.js";
import { datasetDialog } from "../datasets/form.js";
import { append, confirmDialog, dataTable, field, fmtNumber, fmtTime, h, toast } from "../dom.js";
import { datasetBadge } from "../datasets/status.js";

function statusCell(d) {
  if (!d.status) return "–";
  const counts = Object.entries(d.files_by_status || {})
    .filter(([status]) => !(status === "indexed" && d.status === "ready") && !(status === "failed" && d.status === "partial"))
    .map(([status, n]) => `${fmtNumber(n)} ${status}`);
  return h("span", { class: "status-cell" }, datasetBadge(d), counts.length ? h("small", { class: "muted" }, counts.join(", ")) : null);
}

function nameCell(d) {
  return h(
    "div",
    { class: "name-cell" },
    h("a", { href: `#/datasets/${encodeURIComponent(d.id)}`, class: "dataset-link" }, d.name),
    d.description ? h("small", { class: "muted description" }, d.description) : null,
  );
}

export async function render(main, ctx) {
  const { session, signal } = ctx;
  const [caps, tenants] = await Promise.all([
    capabilities(signal),
    session.service ? api("GET", "/api/v1/tenants", { signal }).then((r) => r.tenants || []) : Promise.resolve(null),
  ]);
  const tenantName = Object.fromEntries((tenants || []).map((t) => [t.id, t.name]));
  let datasets = [];

  let shown = "";
  let timer = null;
  signal.addEventListener("abort", () => clearTimeout(timer));
  const load = async () => {
    clearTimeout(timer);
    const listed = await api("GET", "/api/v1/datasets", { signal });
    datasets = listed.datasets || [];
    const state = JSON.stringify(datasets);
    if (state !== shown) {
      shown = state; // redraw only on a change, so a focused button stays put
      table.setRows(datasets);
    }
    count.textContent = `${fmtNumber(datasets.length)} ${datasets.length === 1 ? "dataset" : "datasets"}`;
    if (datasets.some((d) => d.status === "indexing") && !signal.aborted) {
      timer = setTimeout(() => load().catch(() => {}), 3000); // counts move while files index
    }
  };

  const edit = async (existing) => {
    const saved = await datasetDialog({ existing, caps, tenants: existing ? null : tenants });
    if (!saved) return;
    toast(existing ? `Saved “${saved.name}”.` : `Created “${saved.name}”.`, "ok");
    if (!existing) {
      // a new dataset is empty: straight to it, on the Upload tab
      ctx.navigate(`/datasets/${encodeURIComponent(saved.id)}?tab=upload`);
      return;
    }
    if (session.service && !tenantName[saved.tenant_id]) {
      const again = await api("GET", "/api/v1/tenants", { signal });
      tenants.splice(0, tenants.length, ...(again.tenants || []));
      for (const t of tenants) tenantName[t.id] = t.name;
    }
    await load();
  };

  const remove = async (d) => {
    const files = d.files ? ` and its ${fmtNumber(d.files)} files` : "";
    if (!(await confirmDialog(`Delete the dataset “${d.name}”${files}? Its chunks leave the index.`))) return;
    try {
      await api("DELETE", `/api/v1/datasets/${encodeURIComponent(d.id)}`);
      toast(`Deleted “${d.name}”.`, "ok");
    } catch (err) {
      toast(err instanceof ApiError ? err.describe() : String(err), "error");
    }
    await load();
  };

  const columns = [
    { key: "name", label: "Name", render: nameCell, sort: (d) => `${d.name}\u0000${d.description || ""}`.toLowerCase() },
    session.service ? { key: "tenant_id", label: "Tenant", render: (d) => tenantName[d.tenant_id] || d.tenant_id, sort: (d) => tenantName[d.tenant_id] || d.tenant_id } : null,
    { key: "files", label: "Files", render: (d) => h("span", { class: "num" }, fmtNumber(d.files)) },
    { key: "chunks", label: "Chunks", render: (d) => h("span", { class: "num" }, fmtNumber(d.chunks)) },
    { key: "status", label: "Status", render: statusCell },
    { key: "last_update", label: "Last update", render: (d) => fmtTime(d.last_update ?? d.updated_at, { relative: true }), sort: (d) => d.last_update ?? d.updated_at },
    session.can_write
      ? {
          key: "actions",
          label: "Actions",
          sortable: false,
          render: (d) =>
            h(
              "div",
              { class: "row-actions" },
              h("button", { type: "button", class: "small", "aria-label": `Edit ${d.name}`, onclick: () => edit(d) }, "Edit"),
              h("button", { type: "button", class: "small danger", "aria-label": `Delete ${d.name}`, onclick: () => remove(d) }, "Delete"),
            ),
        }
      : null,
  ].filter(Boolean);

  const table = dataTable(columns, [], { caption: "Datasets", empty: "No datasets yet." });
  table.classList.add("datasets-table");
  const search = h("input", { type: "search", name: "filter", autocomplete: "off", placeholder: "Name, description, status…" });
  search.addEventListener("input", () => table.setFilter(search.value.trim()));
  const count = h("p", { class: "muted count", role: "status" });

  append(main, [
    h(
      "div",
      { class: "page-head" },
      h("h1", {}, "Datasets"),
      session.can_write ? h("button", { type: "button", class: "primary", onclick: () => edit(null) }, "New dataset") : null,
    ),
    h("div", { class: "toolbar" }, h("div", { class: "grow" }, field("Search datasets", search)), count),
    table,
  ]);

  await load();
}

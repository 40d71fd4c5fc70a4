// Audit trail (admins): who did what, newest first, from GET /api/v1/audit. Filters by action (an
// action or its noun: "dataset" finds every dataset.*), actor (a key id, "service", "anonymous"),
// since (a local time) and, for the service key, tenant; pages follow the API's cursor. Records
// are read-only: nothing here (or anywhere in the API) changes or deletes one.

import { api, ApiError } from "../api.js";
import { badge, dataTable, field, fmtTime, h, replace } from "../dom.js";

const PAGE = 50;
const ACTIONS = [
  "tenant.create",
  "key.create",
  "key.revoke",
  "dataset.create",
  "dataset.update",
  "dataset.delete",
  "dataset.migrate",
  "migration.switch",
  "migration.rollback",
  "migration.cancel",
  "source.add",
  "source.sync",
  "source.remove",
  "file.upload",
  "file.add",
  "file.disable",
  "file.enable",
  "file.delete",
  "file.reindex",
  "job.cancel",
  "job.retry",
  "auth.failed_burst",
];

const describe = (err) => (err instanceof ApiError ? err.describe() : String(err && err.message ? err.message : err));

/** A record's detail as short "name: value" lines (values as JSON, cut). */
function detailOf(record) {
  const entries = Object.entries(record.detail || {});
  if (!entries.length) return h("span", { class: "muted" }, "–");
  return h(
    "ul",
    { class: "audit-detail" },
    entries.map(([name, value]) => {
      const text = typeof value === "string" ? value : JSON.stringify(value);
      return h("li", {}, h("span", { class: "muted" }, `${name}: `), text.length > 120 ? `${text.slice(0, 120)}…` : text);
    }),
  );
}

function columns(session) {
  const cols = [
    { key: "at", label: "When", render: (r) => h("time", { datetime: new Date(r.at * 1000).toISOString() }, fmtTime(r.at)) },
    { key: "action", label: "Action", render: (r) => h("code", { class: "audit-action" }, r.action) },
    { key: "outcome", label: "Outcome", render: (r) => badge(r.outcome) },
    {
      key: "actor",
      label: "Who",
      render: (r) => h("span", {}, h("code", {}, r.actor), r.actor_role ? h("small", { class: "muted" }, ` ${r.actor_role}`) : null),
    },
  ];
  if (session.service) cols.push({ key: "tenant_id", label: "Tenant", render: (r) => (r.tenant_id ? h("code", {}, r.tenant_id) : h("span", { class: "muted" }, "–")) });
  cols.push(
    {
      key: "target_id",
      label: "Target",
      render: (r) => (r.target_kind ? h("span", {}, `${r.target_kind} `, r.target_id ? h("code", {}, r.target_id) : null) : "–"),
    },
    { key: "client", label: "Client", render: (r) => r.client || "–" },
    { key: "detail", label: "Detail", sortable: false, render: detailOf },
  );
  return cols;
}

export async function render(main, ctx) {
  const { session, signal } = ctx;
  if (!session.can_admin) {
    main.append(h("h1", {}, "Audit trail"), h("p", {}, "Reading the audit trail needs an admin key of a tenant, or the service key."));
    return;
  }
  const action = h("input", { type: "text", name: "action", list: "audit-actions", maxlength: 200, autocomplete: "off", value: ctx.query.get("action") || "" });
  const actor = h("input", { type: "text", name: "actor", maxlength: 200, autocomplete: "off", value: ctx.query.get("actor") || "" });
  const since = h("input", { type: "datetime-local", name: "since" });
  const tenant = session.service ? h("input", { type: "text", name: "tenant", maxlength: 200, autocomplete: "off", value: ctx.query.get("tenant") || "" }) : null;
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const status = h("p", { class: "muted", "aria-live": "polite" });
  const table = dataTable(columns(session), [], { caption: "Audit records, newest first", empty: "No records match." });
  table.classList.add("audit-table");
  const newer = h("button", { type: "button", disabled: true }, "Newer");
  const older = h("button", { type: "button", disabled: true }, "Older");

  // the cursors of the pages shown so far: [null (the newest page), c1, c2, …]
  let cursors = [null];
  let next = null;

  const filters = () => {
    const params = new URLSearchParams({ limit: String(PAGE) });
    if (action.value.trim()) params.set("action", action.value.trim());
    if (actor.value.trim()) params.set("actor", actor.value.trim());
    if (since.value) params.set("since", String(new Date(since.value).getTime() / 1000));
    if (tenant && tenant.value.trim()) params.set("tenant", tenant.value.trim());
    return params;
  };

  // a load started later wins: an answer to an earlier one (the screen's first, unfiltered load
  // still on its way when filters are applied) is dropped, or its rows and cursor would show
  let latest = 0;
  const load = async () => {
    const mine = ++latest;
    error.hidden = true;
    // until this page answers, the caption and the pager belong to no page: a click on Older
    // meanwhile would follow the cursor of the page being replaced (another filter's)
    status.textContent = "Loading…";
    newer.disabled = true;
    older.disabled = true;
    const params = filters();
    const cursor = cursors[cursors.length - 1];
    if (cursor !== null) params.set("cursor", String(cursor));
    try {
      const page = await api("GET", `/api/v1/audit?${params}`, { signal });
      if (mine !== latest) return;
      table.setRows(page.records || []);
      next = page.next_cursor;
      const first = cursors.length === 1;
      status.textContent = `${(page.records || []).length} records${first ? ", the newest" : `, page ${cursors.length}`}.`;
    } catch (err) {
      if ((err && err.name === "AbortError") || mine !== latest) return;
      error.textContent = describe(err);
      error.hidden = false;
      table.setRows([]);
      next = null;
      status.textContent = "";
    }
    newer.disabled = cursors.length === 1;
    older.disabled = next === null;
  };

  newer.addEventListener("click", () => {
    if (cursors.length > 1) cursors = cursors.slice(0, -1);
    load();
  });
  older.addEventListener("click", () => {
    if (next === null) return;
    cursors = [...cursors, next];
    load();
  });

  const form = h(
    "form",
    {
      class: "card inline-form audit-filters",
      "aria-label": "Filter the audit trail",
      onsubmit: (event) => {
        event.preventDefault();
        cursors = [null];
        load();
      },
    },
    h("h2", {}, "Filters"),
    h(
      "div",
      { class: "form-line" },
      field("Action", action, "an action, or its first word: dataset"),
      field("Who", actor, "a key id, service or anonymous"),
      field("Since", since, "your local time"),
      tenant ? field("Tenant id", tenant) : null,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Apply filters")),
    ),
    h("datalist", { id: "audit-actions" }, ACTIONS.map((a) => h("option", { value: a }))),
    error,
  );

  const lead = session.service
    ? [
        "Every administrative action of every tenant, and bursts of failed sign-ins. Records cannot be changed or deleted; export them as JSON lines with ",
        h("code", {}, "GET /api/v1/audit/export"),
        " or ",
        h("code", {}, "ragd audit --jsonl"),
        ".",
      ]
    : ["Every administrative action in your tenant. Records cannot be changed or deleted."];
  replace(
    main,
    h("h1", {}, "Audit trail"),
    h("p", { class: "muted admin-lead" }, ...lead),
    form,
    status,
    h("div", { class: "table-scroll" }, table),
    h("nav", { class: "pager", "aria-label": "Audit pages" }, newer, " ", older),
  );
  await load();
}

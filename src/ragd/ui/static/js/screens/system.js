// System: liveness and readiness (GET /health, /health/ready), and GET /api/v1/system: who the key
// is, counts, the index manifest, capabilities, and (service key only) the settings in effect,
// secrets masked by the server as "***". Every part the server leaves out shows "–". The service
// key and tenant admins also see each tenant's use against its limits (GET …/tenants/{id}/usage).

import { api, ApiError } from "../api.js";
import { badge, dataTable, field, fmtBytes, fmtNumber, h, replace } from "../dom.js";
import { jobBadge } from "../datasets/status.js";

const MASK = "***";
const dash = (v) => (v === null || v === undefined || v === "" ? "–" : v);
const yesNo = (v) => (v === true ? "yes" : v === false ? "no" : "–");
const list = (v) => (Array.isArray(v) ? (v.length ? v.join(", ") : "none") : dash(v));

async function probe(path, signal) {
  try {
    const body = await api("GET", path, { signal });
    return { ok: true, detail: body && body.detail };
  } catch (err) {
    if (err instanceof ApiError && err.status !== 401) return { ok: false, detail: (err.body && err.body.detail) || err.message };
    throw err;
  }
}

async function systemInfo(signal) {
  try {
    return await api("GET", "/api/v1/system", { signal });
  } catch (err) {
    if (err instanceof ApiError && err.status !== 401) return { error: err.describe() };
    throw err;
  }
}

const definitions = (rows, cls) =>
  h(
    "dl",
    { class: ["defs", cls] },
    rows.filter(Boolean).map(([label, value]) => h("div", {}, h("dt", {}, label), h("dd", {}, value))),
  );

function statCard(label, value, extra, cls) {
  return h("div", { class: ["card stat-card", cls] }, h("div", { class: "stat-label" }, label), h("div", { class: "stat" }, value), extra || null);
}

// ---- sections ---------------------------------------------------------------------------------

function healthSection(live, ready, info) {
  const isReady = info.ready ?? ready.ok;
  const detail = info.ready_detail ?? (ready.ok ? null : ready.detail);
  return h(
    "section",
    { class: "card health", "aria-labelledby": "health-title" },
    h("h2", { id: "health-title" }, "Health"),
    definitions([
      ["Readiness", h("span", {}, isReady ? badge("ready") : h("span", { class: "badge badge-error" }, "not ready"), detail ? h("span", { class: "error ready-detail" }, ` ${detail}`) : null)],
      ["Liveness", badge(live.ok ? "ok" : "error")],
      ["Version", dash(info.version)],
      ["Signed in as", principalText(info.principal)],
    ]),
  );
}

function principalText(p) {
  if (!p) return "–";
  if (p.service) return p.open ? "open service, no key (every tenant)" : "the service key (every tenant)";
  return `${p.tenant_name || p.tenant_id || "–"} · ${p.role || "–"}`;
}

function countsSection(counts, service) {
  const c = counts || {};
  const jobs = c.jobs_by_status || null;
  const jobList = jobs
    ? h(
        "ul",
        { class: "job-counts" },
        Object.entries(jobs).map(([status, n]) => h("li", {}, h("a", { href: `#/jobs?status=${encodeURIComponent(status)}` }, jobBadge(status)), ` ${fmtNumber(n)}`)),
      )
    : h("p", { class: "muted" }, "–");
  const jobTotal = jobs ? Object.values(jobs).reduce((a, b) => a + b, 0) : null;
  return h(
    "section",
    { "aria-labelledby": "counts-title" },
    h("h2", { id: "counts-title" }, "Counts"),
    h(
      "div",
      { class: "grid stats" },
      statCard("Datasets", fmtNumber(c.datasets)),
      statCard("Files", fmtNumber(c.files)),
      statCard("Chunks", fmtNumber(c.chunks)),
      service || c.collections !== undefined ? statCard("Collections", fmtNumber(c.collections)) : null,
      service || c.points !== undefined ? statCard("Points", fmtNumber(c.points)) : null,
      statCard("Jobs", fmtNumber(jobTotal), jobList, "jobs-card"),
    ),
  );
}

const MANIFEST_LABELS = [
  ["dense_model", "Dense model"],
  ["dense_dim", "Dimension"],
  ["query_prefix", "Query prefix"],
  ["document_prefix", "Document prefix"],
  ["sparse_model", "Sparse model"],
  ["chunker_version", "Chunker version"],
  ["schema_version", "Schema version"],
];

function prefix(v) {
  return v === "" ? h("span", { class: "muted" }, "(none)") : dash(v);
}

function manifestSection(manifest) {
  const m = manifest || {};
  const known = new Set([...MANIFEST_LABELS.map(([k]) => k), "extra_dense"]);
  const rows = MANIFEST_LABELS.map(([k, label]) => [label, k.endsWith("prefix") ? prefix(m[k]) : h("span", { class: "mono" }, String(dash(m[k])))]);
  for (const [k, v] of Object.entries(m)) if (!known.has(k)) rows.push([k, h("span", { class: "mono" }, scalar(v))]);
  const extra = Array.isArray(m.extra_dense) ? m.extra_dense : [];
  return h(
    "section",
    { class: "card manifest", "aria-labelledby": "manifest-title" },
    h("h2", { id: "manifest-title" }, "Index manifest"),
    h("p", { class: "muted" }, "What the index was built with; a start-up with different settings stops with INDEX_MISMATCH."),
    definitions(rows),
    extra.length
      ? h(
          "table",
          { class: "data extra-dense" },
          h("caption", {}, "Other dense models"),
          h("thead", {}, h("tr", {}, ["Name", "Model", "Dimension"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            {},
            extra.map((e) => h("tr", {}, h("td", { "data-label": "Name" }, dash(e.name)), h("td", { "data-label": "Model", class: "mono" }, dash(e.model)), h("td", { "data-label": "Dimension" }, dash(e.dim)))),
          ),
        )
      : null,
  );
}

function capabilitiesSection(caps) {
  const c = caps || {};
  return h(
    "section",
    { class: "card capabilities", "aria-labelledby": "caps-title" },
    h("h2", { id: "caps-title" }, "Capabilities"),
    definitions([
      ["Dense models", list(c.embedders)],
      ["Rerankers", list(c.rerankers)],
      ["Chat", c.chat ? `yes · ${dash(c.chat_model)}` : yesNo(c.chat)],
      ["Search modes", list(c.modes)],
      ["Default mode", dash(c.default_mode)],
      ["Fusion", dash(c.fusion)],
      ["Vector weight", dash(c.vector_weight)],
      ["Retrieval agent", yesNo(c.agentic)],
    ]),
  );
}

// ---- limits: each tenant's use against its limits (GET /api/v1/tenants/{id}/usage) -------------

// tenants asked for their usage at most (the service key's table); operators create tenants
const MAX_TENANTS = 200;

/** The usage rows the key may see: every tenant's for the service key, its own for a tenant
 * admin; null for a key that may not read limits (the section is left out). */
async function tenantUsage(principal, signal) {
  if (!principal || !(principal.service || principal.role === "admin")) return null;
  try {
    const tenants = principal.service
      ? ((await api("GET", "/api/v1/tenants", { signal })).tenants || []).slice(0, MAX_TENANTS)
      : [{ id: principal.tenant_id, name: principal.tenant_name || principal.tenant_id }];
    const rows = await Promise.all(
      tenants.map(async (t) => ({ name: t.name, ...(await api("GET", `/api/v1/tenants/${encodeURIComponent(t.id)}/usage`, { signal })) })),
    );
    return { rows, more: principal.service && rows.length === MAX_TENANTS };
  } catch (err) {
    if (err instanceof ApiError && err.status !== 401) return { error: err.describe() };
    throw err;
  }
}

function against(pair, fmt) {
  if (!pair) return "–";
  const { used, limit } = pair;
  if (!limit) return h("span", { class: "usage" }, fmt(used), h("small", { class: "muted" }, " · no limit"));
  const share = Math.min(100, Math.round((100 * used) / limit));
  return h(
    "span",
    { class: ["usage", used >= limit ? "usage-full" : null] },
    `${fmt(used)} of ${fmt(limit)} `,
    h("meter", { min: 0, max: limit, value: Math.min(used, limit), high: 0.8 * limit, optimum: 0, "aria-label": `${share}% used` }),
  );
}

const perMinute = (n) => (n ? `${fmtNumber(n)}/min` : "no limit");

function limitsSection(usage) {
  const columns = [
    { key: "name", label: "Tenant", render: (r) => dash(r.name) },
    { key: "chunks", label: "Chunks", sort: (r) => r.usage.chunks, render: (r) => against(r.against.chunks, fmtNumber) },
    { key: "bytes", label: "Storage", sort: (r) => r.usage.bytes, render: (r) => against(r.against.bytes, fmtBytes) },
    { key: "jobs", label: "Running jobs", sort: (r) => r.usage.running_jobs, render: (r) => against(r.against.running_jobs, fmtNumber) },
    {
      key: "rates",
      label: "Requests per key",
      sortable: false,
      render: (r) => `search ${perMinute(r.limits.search_per_minute)} · chat ${perMinute(r.limits.chat_per_minute)} · models ${perMinute(r.limits.models_per_minute)}`,
    },
  ];
  return h(
    "section",
    { class: "card limits", "aria-labelledby": "limits-title" },
    h("h2", { id: "limits-title" }, "Limits"),
    h("p", { class: "muted" }, "Each tenant's use against its limits; the service key sets them (PUT /api/v1/tenants/{id}/limits)."),
    usage.error
      ? h("p", { class: "error", role: "alert" }, `The limits did not load: ${usage.error}`)
      : dataTable(columns, usage.rows, { caption: "Use against limits", empty: "No tenants yet." }),
    usage.more ? h("p", { class: "muted" }, `The first ${MAX_TENANTS} tenants are shown.`) : null,
  );
}

// ---- backups (service key): where, how often, and how the newest one went -----------------------

function backupsSection(b) {
  const last = b.last;
  const when = last ? new Date(last.at * 1000).toLocaleString() : "none yet";
  const outcome = last ? h("span", {}, badge(last.outcome === "ok" ? "ok" : "failed"), last.code ? ` ${last.code}` : "") : "–";
  return h(
    "section",
    { class: "card backups", "aria-labelledby": "backups-title" },
    h("h2", { id: "backups-title" }, "Backups"),
    definitions([
      ["Folder", dash(b.dir)],
      ["Schedule", b.interval_s > 0 ? `every ${fmtNumber(b.interval_s)} s, the newest ${fmtNumber(b.keep)} kept` : "none (ragd backup, or POST /api/v1/system/backup)"],
      ["Last backup", last ? `${when} · ${dash(last.name)}` : when],
      ["Outcome", outcome],
    ]),
  );
}

// ---- settings: a collapsible, searchable table per group ----------------------------------------

function scalar(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** [["server.api_key", "***"], …]: nested objects flattened; lists and scalars are leaves. */
function flatten(obj, base = "") {
  const out = [];
  for (const [k, v] of Object.entries(obj || {})) {
    const path = base ? `${base}.${k}` : k;
    if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) out.push(...flatten(v, path));
    else out.push([path, v]);
  }
  return out;
}

function valueCell(v) {
  if (v === MASK) return h("span", { class: "masked", title: "a secret: the server never sends it" }, MASK);
  if (typeof v === "boolean") return h("span", { class: v ? "bool-true" : "bool-false" }, String(v));
  if (v === null || v === undefined) return h("span", { class: "muted not-set" }, "not set");
  return h("span", { class: "mono setting-value" }, scalar(v));
}

function settingsSection(settings) {
  const groups = new Map([["general", []]]);
  for (const [path, v] of flatten(settings)) {
    const dot = path.indexOf(".");
    const group = dot < 0 ? "general" : path.slice(0, dot);
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push([path, v]);
  }
  const total = [...groups.values()].reduce((a, g) => a + g.length, 0);
  const blocks = [];
  for (const [name, rows] of groups) {
    if (!rows.length) continue;
    const trs = rows.map(([path, v]) => {
      const tr = h("tr", {}, h("th", { scope: "row", class: "mono setting-key" }, path), h("td", {}, valueCell(v)));
      tr.dataset.text = `${path} ${scalar(v)}`.toLowerCase();
      return tr;
    });
    const summary = h("summary", {}, h("span", { class: "group-name" }, name), h("small", { class: "muted group-count" }, ` ${rows.length}`));
    const details = h(
      "details",
      { class: "settings-group" },
      summary,
      h("table", { class: "data settings-table" }, h("caption", { class: "admin-sr" }, `Settings: ${name}`), h("tbody", {}, trs)),
    );
    blocks.push({ details, trs, count: summary.lastChild, size: rows.length });
  }
  const search = h("input", { type: "search", name: "settings-filter", autocomplete: "off", placeholder: "api_key, model, chunking…" });
  const status = h("p", { class: "muted settings-count", role: "status" }, `${fmtNumber(total)} settings`);
  search.addEventListener("input", () => {
    const q = search.value.trim().toLowerCase();
    let shown = 0;
    for (const b of blocks) {
      let n = 0;
      for (const tr of b.trs) {
        tr.hidden = Boolean(q) && !tr.dataset.text.includes(q);
        if (!tr.hidden) n++;
      }
      shown += n;
      b.details.hidden = n === 0;
      b.details.open = Boolean(q) && n > 0;
      b.count.textContent = q ? ` ${n} of ${b.size}` : ` ${b.size}`;
    }
    status.textContent = q ? `${fmtNumber(shown)} of ${fmtNumber(total)} settings match` : `${fmtNumber(total)} settings`;
  });
  const expand = (open) => () => {
    for (const b of blocks) if (!b.details.hidden) b.details.open = open;
  };
  return h(
    "section",
    { class: "card settings", "aria-labelledby": "settings-title" },
    h("h2", { id: "settings-title" }, "Settings in effect"),
    h("p", { class: "muted" }, "Shown to the service key only. Secrets (keys, passwords, tokens) appear as ***: the server never sends them."),
    h(
      "div",
      { class: "toolbar" },
      h("div", { class: "grow" }, field("Search settings", search)),
      h("button", { type: "button", class: "small", onclick: expand(true) }, "Expand all"),
      h("button", { type: "button", class: "small", onclick: expand(false) }, "Collapse all"),
    ),
    status,
    h("div", { class: "settings-groups" }, blocks.map((b) => b.details)),
  );
}

// ---- the screen -------------------------------------------------------------------------------

export async function render(main, ctx) {
  const { session, signal } = ctx;
  const body = h("div", { class: "system-body" });
  const refresh = h("button", { type: "button", onclick: () => load().catch(() => {}) }, "Refresh");
  main.append(h("div", { class: "admin-head" }, h("h1", {}, "System"), refresh), body);

  async function load() {
    refresh.disabled = true;
    try {
      const [live, ready, info] = await Promise.all([probe("/health", signal), probe("/health/ready", signal), systemInfo(signal)]);
      if (signal.aborted) return;
      const usage = await tenantUsage(info.principal, signal);
      if (signal.aborted) return;
      const settingsFilter = body.querySelector("input[name=settings-filter]");
      replace(
        body,
        info.error ? h("p", { class: "error", role: "alert" }, `The system overview did not load: ${info.error}`) : null,
        healthSection(live, ready, info),
        countsSection(info.counts, session.service),
        usage ? limitsSection(usage) : null,
        h("div", { class: "grid system-cols" }, manifestSection(info.manifest), capabilitiesSection(info.capabilities)),
        info.backups ? backupsSection(info.backups) : null,
        info.settings ? settingsSection(info.settings) : null,
      );
      if (settingsFilter && settingsFilter.value) {
        const again = body.querySelector("input[name=settings-filter]");
        if (again) {
          again.value = settingsFilter.value;
          again.dispatchEvent(new Event("input"));
        }
      }
    } finally {
      refresh.disabled = false;
    }
  }
  await load();
}

// One dataset: its summary, and five tabs: Files (live), Upload (drag and drop, progress over
// SSE), Sources (folder, web, S3), Evaluation (its evaluation set and a run of it), Migrations (to
// another model or chunking: state, progress, evaluation, switch and rollback). The tab is in the
// hash query (?tab=files|upload|sources|evaluation|migrations).

import { api } from "../api.js";
import { append, fmtNumber, fmtTime, h } from "../dom.js";
import { evaluationPanel } from "../datasets/evaluation.js";
import { filesPanel } from "../datasets/files.js";
import { migrationsPanel } from "../datasets/migrations.js";
import { sourcesPanel } from "../datasets/sources.js";
import { uploadPanel } from "../datasets/upload.js";
import { datasetBadge } from "../datasets/status.js";

const TABS = [
  ["files", "Files"],
  ["upload", "Upload"],
  ["sources", "Sources"],
  ["evaluation", "Evaluation"],
  ["migrations", "Migrations"],
];

function summary(d) {
  const c = d.chunking || {};
  const chunking = c.strategy ? `${c.strategy}${c.size ? ` · ${c.size}` : ""}${c.overlap ? ` / ${c.overlap} overlap` : ""}` : "server default";
  const items = [
    ["Status", datasetBadge(d)],
    ["Files", fmtNumber(d.files)],
    ["Chunks", fmtNumber(d.chunks)],
    ["Last update", fmtTime(d.last_update ?? d.updated_at, { relative: true })],
    ["Chunking", chunking],
    ["Embedding", d.embedding || "default"],
    ["Allowed roles", (d.allowed_roles || []).length ? d.allowed_roles.join(", ") : "every role"],
  ];
  return h("dl", { class: "dataset-summary" }, items.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
}

export async function render(main, ctx) {
  const { params, query, signal } = ctx;
  const id = params.id;
  const base = `/api/v1/datasets/${encodeURIComponent(id)}`;
  let dataset = await api("GET", base, { signal });
  const summaryBox = h("div", { class: "summary-box" }, summary(dataset));
  const refreshDataset = async () => {
    try {
      dataset = await api("GET", base, { signal });
      summaryBox.replaceChildren(summary(dataset));
    } catch {
      // the files table says what went wrong; the summary keeps its last numbers
    }
  };

  const files = filesPanel(ctx, dataset, { onChange: refreshDataset });
  const panels = {
    files,
    upload: uploadPanel(ctx, dataset, { onChange: () => files.refresh() }),
    sources: sourcesPanel(ctx, dataset, { onChange: () => files.refresh() }),
    evaluation: evaluationPanel(ctx, dataset),
    migrations: migrationsPanel(ctx, dataset, { onChange: refreshDataset }),
  };
  let current = TABS.some(([k]) => k === query.get("tab")) ? query.get("tab") : "files";

  const tabs = TABS.map(([key, label]) =>
    h("button", { type: "button", role: "tab", id: `tab-${key}`, "aria-controls": `panel-${key}`, "data-tab": key }, label),
  );
  const sections = TABS.map(([key, label]) =>
    h("section", { role: "tabpanel", id: `panel-${key}`, "aria-labelledby": `tab-${key}`, class: "tab-panel" }, h("h2", { class: "sr-only" }, label), panels[key].el),
  );
  const select = (key, focus) => {
    current = key;
    tabs.forEach((t, i) => {
      const on = TABS[i][0] === key;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      sections[i].hidden = !on;
      if (on && focus) t.focus();
    });
    const next = `#/datasets/${encodeURIComponent(id)}?tab=${key}`;
    if (location.hash !== next) history.replaceState(null, "", next);
    if (panels[key].shown) panels[key].shown();
  };
  tabs.forEach((t, i) => {
    t.addEventListener("click", () => select(TABS[i][0], false));
    t.addEventListener("keydown", (e) => {
      const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: TABS.length - 1 };
      if (!(e.key in moves)) return;
      e.preventDefault();
      select(TABS[(moves[e.key] + TABS.length) % TABS.length][0], true);
    });
  });

  append(main, [
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/datasets" }, "Datasets"), " / "),
    h("h1", { class: "dataset-title" }, dataset.name),
    dataset.description ? h("p", { class: "muted description" }, dataset.description) : null,
    summaryBox,
    h("div", { class: "tabs", role: "tablist", "aria-label": "Dataset" }, tabs),
    ...sections,
  ]);

  select(current, false);
  await files.refresh();
  files.live();
}

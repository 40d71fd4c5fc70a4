// The Evaluation tab: the dataset's evaluation set (labelled queries: added from the sandbox's
// "Answers it", the API or `ragd eval --dataset --import`), and a run of it with knobs side by side
// with the dataset's current settings: nDCG@10, recall@k, MRR@10, and each query's rank in both,
// won or lost (docs/knowledge-bases.md#evaluation-sets).

import { api, ApiError } from "../api.js";
import { dataTable, field, fmtNumber, fmtScore, h, replace, toast } from "../dom.js";

const MODES = ["hybrid", "dense", "sparse"];
const PAGE = 1000;

function describe(err) {
  return err instanceof ApiError ? err.describe() : String((err && err.message) || err);
}

export function evaluationPanel(ctx, dataset) {
  const { session, signal } = ctx;
  const base = `/api/v1/datasets/${encodeURIComponent(dataset.id)}`;
  const writer = session.can_write;
  const count = h("p", { class: "muted evalset-count", role: "status", "aria-live": "polite" });
  const list = h("div", { class: "evalset-list" });
  const mode = h("select", { name: "eval-mode" }, MODES.map((m) => h("option", { value: m }, m)));
  const k = h("input", { type: "number", name: "eval-k", min: 1, max: 100, step: 1, value: "10", inputmode: "numeric" });
  const weight = h("input", { type: "number", name: "eval-w", min: 0, max: 1, step: 0.05, placeholder: "server default", inputmode: "decimal" });
  const diversity = h("input", { type: "number", name: "eval-div", min: 0, max: 1, step: 0.05, placeholder: "0", inputmode: "decimal" });
  const perFile = h("input", { type: "number", name: "eval-mpf", min: 1, max: 100, step: 1, placeholder: "no cap", inputmode: "numeric" });
  const run = h("button", { type: "submit", class: "primary" }, "Run against current settings");
  const status = h("p", { class: "eval-status", role: "status", "aria-live": "polite" });
  const report = h("div", { class: "eval-report" });
  const form = h(
    "form",
    { class: "eval-form card", "aria-label": "Run the evaluation set" },
    h("div", { class: "knob-grid" }, field("Mode", mode), field("Results (k)", k), field("Dense share", weight, "hybrid: 0–1"), field("Diversity (MMR)", diversity), field("Max per file", perFile)),
    h("div", { class: "actions" }, run),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { mode: mode.value, k: Number.parseInt(k.value, 10) || 10, baseline: {} };
    if (weight.value !== "") body.vector_weight = Number(weight.value);
    if (diversity.value !== "") body.diversity = Number(diversity.value);
    if (perFile.value !== "") body.max_per_file = Number.parseInt(perFile.value, 10);
    run.disabled = true;
    replace(status, "Running the evaluation set…");
    report.setAttribute("aria-busy", "true");
    try {
      const out = await api("POST", `${base}/eval`, { json: body, signal });
      replace(status, `${fmtNumber(out.ran)} of ${fmtNumber(out.total)} queries · ${out.wins.length} won · ${out.losses.length} lost`);
      status.classList.remove("error");
      replace(report, ...comparison(out));
    } catch (err) {
      if (signal.aborted) return;
      replace(status, describe(err));
      status.classList.add("error");
    } finally {
      run.disabled = false;
      report.removeAttribute("aria-busy");
    }
  });

  async function load() {
    try {
      const out = await api("GET", `${base}/evalset?limit=${PAGE}`, { signal });
      replace(count, `${fmtNumber(out.total)} labelled ${out.total === 1 ? "query" : "queries"}`);
      run.disabled = !out.total;
      replace(list, out.total ? labels(out.queries) : h("p", { class: "empty-state" }, "No labelled queries yet: mark a hit with ", h("strong", {}, "Answers it"), " in the ", h("a", { href: "#/sandbox" }, "sandbox"), ", or import them with ragd eval --dataset --import."));
    } catch (err) {
      if (!signal.aborted) replace(list, h("p", { class: "error", role: "alert" }, describe(err)));
    }
  }

  function labels(rows) {
    const columns = [
      { key: "query", label: "Query" },
      { key: "files", label: "Answered by", render: (q) => (q.files.length ? `${q.files.length} file${q.files.length === 1 ? "" : "s"}` : `${q.chunks.length} chunk${q.chunks.length === 1 ? "" : "s"}`), sort: (q) => q.files.length + q.chunks.length },
      { key: "source", label: "From" },
    ];
    if (writer) {
      columns.push({
        key: "id",
        label: "",
        sortable: false,
        render: (q) => h("button", { type: "button", class: "small danger", "aria-label": `Delete the labelled query ${q.query}`, onclick: () => remove(q) }, "Delete"),
      });
    }
    return dataTable(columns, rows, { caption: "The evaluation set" });
  }

  async function remove(q) {
    try {
      await api("DELETE", `${base}/evalset/${encodeURIComponent(q.id)}`, { signal });
      toast("Labelled query deleted");
      await load();
    } catch (err) {
      if (!signal.aborted) toast(describe(err), "error");
    }
  }

  const el = h(
    "div",
    { class: "evaluation" },
    h("p", { class: "muted" }, "Labelled queries and the files that answer them: run them with other knobs and see, query by query, what wins and what loses against the dataset's current settings."),
    count,
    form,
    status,
    report,
    list,
  );
  return { el, shown: load };
}

function comparison(out) {
  const a = out.baseline;
  const b = out.report;
  const metric = (label, key) => h("tr", { "data-metric": key }, h("th", { scope: "row" }, label), h("td", { class: "num" }, fmtScore(a[key])), h("td", { class: "num" }, fmtScore(b[key])));
  const summaryTable = h(
    "table",
    { class: "data eval-metrics" },
    h("caption", {}, "Both runs over the same queries"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "metric"), h("th", { scope: "col" }, "current settings"), h("th", { scope: "col" }, "these knobs"))),
    h("tbody", {}, metric("nDCG@10", "ndcg_at_10"), metric(`recall@${b.k}`, "recall_at_k"), metric("MRR@10", "mrr_at_10")),
  );
  const before = Object.fromEntries(a.queries.map((q) => [q.id, q.rank]));
  const wins = new Set(out.wins);
  const losses = new Set(out.losses);
  const rank = (r) => (r === null || r === undefined ? "–" : `#${r}`);
  const rows = b.queries.map((q) => {
    const change = wins.has(q.id) ? "won" : losses.has(q.id) ? "lost" : "same";
    return h("tr", { class: ["eval-query", change], "data-change": change }, h("td", {}, q.query), h("td", { class: "num" }, rank(before[q.id])), h("td", { class: "num" }, rank(q.rank)), h("td", {}, change));
  });
  const perQuery = h(
    "table",
    { class: "data eval-queries" },
    h("caption", {}, "Where each query's first expected file ranked"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "query"), h("th", { scope: "col" }, "current"), h("th", { scope: "col" }, "these knobs"), h("th", { scope: "col" }, "change"))),
    h("tbody", {}, rows),
  );
  return [summaryTable, perQuery];
}

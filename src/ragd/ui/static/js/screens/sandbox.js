// The retrieval sandbox: one query over the chosen datasets with the search knobs, every hit's
// score breakdown, the stages' latency, the neighbouring chunks, and A/B compare of two knob sets.
//
// The state lives in the hash query (#/sandbox?q=…&mode=…&b.mode=…&cmp=1): a search is a link,
// and Back shows the previous one. It never holds a key: the session cookie does.

import { api, ApiError } from "../api.js";
import { chunkHref, pageLabel, searchable } from "../capabilities.js";
import { append, clear, field, fmtNumber, fmtScore, h, highlight, queryTerms, replace } from "../dom.js";
import { filterBuilder } from "../filter_builder.js";
import { pageButton } from "../page_view.js";
import { matchWindow } from "../snippet.js";

const MAX_FIELD_LOOKUPS = 50;
const MODES = ["hybrid", "dense", "sparse"];
const MAX_QUERY_CHARS = 2000; // the server's limit when it does not say (capabilities.max_query_chars)
// hash key → knob; a compare column's keys get the "b." prefix
const KNOB_KEYS = { mode: "mode", k: "k", w: "vector_weight", div: "diversity", mpf: "max_per_file", rr: "rerank", min: "min_score", f: "filter" };
const FILTER_HINT = '{"must": [{"key": "tags", "match": {"value": "invoice"}}]}';
const STAGES = { embed_sparse: "BM25 query", embed_dense: "dense query", qdrant: "Qdrant", rerank: "rerank", total: "server total" };
const SCORE_ROWS = [
  ["dense", "dense (cosine)"],
  ["sparse", "sparse (BM25)"],
  ["fused", "fused"],
  ["rerank", "rerank"],
  ["relevance", "relevance"],
  ["score", "final score"],
];

export async function render(main, ctx) {
  const { signal } = ctx;
  // the service key also reaches collections outside datasets (Open WebUI's, the CLI's)
  const { caps, datasets, collections: raw } = await searchable(ctx);
  const state = readState(ctx.query);
  const names = Object.fromEntries(datasets.map((d) => [d.id, d.name]));
  const allIds = datasets.map((d) => d.id);

  const maxChars = caps && Number.isInteger(caps.max_query_chars) ? caps.max_query_chars : MAX_QUERY_CHARS;
  const query = h("input", { type: "search", name: "q", value: state.q, required: true, autocomplete: "off", maxlength: maxChars, placeholder: "What are you looking for?" });
  const queryField = field("Query", query, " ");
  const counter = queryField.querySelector(".hint");
  counter.classList.add("query-count");
  const count = () => {
    counter.textContent = `${fmtNumber(query.value.length)} / ${fmtNumber(maxChars)} characters`;
    counter.classList.toggle("near", query.value.length > maxChars * 0.9);
  };
  query.addEventListener("input", count);
  count();
  const picker = datasetPicker(datasets, state.ds);
  const colPicker = raw.length ? collectionPicker(raw, state.col) : null;
  const panels = { a: knobPanel("a", state.a, caps), b: knobPanel("b", state.b, caps) };
  // the datasets' own metadata fields, with their types, become keys of the filter builders
  datasetFields(datasets, signal).then((fields) => Object.values(panels).forEach((p) => p.setFields(fields)));
  const compare = h("button", { type: "button", class: "compare-toggle", "aria-pressed": String(state.cmp) }, "Compare A / B");
  const knobs = h("div", { class: "knob-sets" }, panels.a.el, panels.b.el);
  const status = h("p", { class: "sandbox-status", role: "status", "aria-live": "polite" });
  const results = h("div", { class: "sandbox-results" });
  const showCompare = (on) => {
    compare.setAttribute("aria-pressed", String(on));
    panels.b.el.hidden = !on;
    knobs.classList.toggle("two", on);
    panels.a.legend.textContent = on ? "Knobs A" : "Knobs";
  };
  compare.addEventListener("click", () => showCompare(compare.getAttribute("aria-pressed") !== "true"));
  showCompare(state.cmp);

  const form = h(
    "form",
    { class: "sandbox-form card", role: "search", "aria-label": "Retrieval sandbox" },
    h("div", { class: "sandbox-query" }, queryField, h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Search"), compare)),
    picker.el,
    colPicker ? colPicker.el : null,
    knobs,
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const next = {
      q: query.value.trim(),
      ds: picker.read(),
      col: colPicker ? colPicker.read() : [],
      cmp: compare.getAttribute("aria-pressed") === "true",
      a: panels.a.read(),
      b: panels.b.read(),
    };
    if (!next.q) return;
    pushState(next);
    run(next).then(() => bringIntoView(status, signal));
  });

  replace(
    main,
    h("h1", {}, "Retrieval sandbox"),
    h("p", { class: "muted" }, "Search the datasets as the API does, and see why each hit ranks where it does."),
    form,
    status,
    results,
  );

  async function run(s) {
    if (s.ds && !s.ds.length && !s.col.length) {
      replace(status, h("span", { class: "error" }, raw.length ? "Choose at least one dataset or collection." : "Choose at least one dataset."));
      clear(results);
      return;
    }
    // with collections named, the datasets are named too ("all" would otherwise mean none of them)
    s.scope = s.col.length ? { dataset_ids: s.ds || allIds, collection_names: s.col } : { dataset_ids: s.ds };
    replace(status, "Searching…");
    results.setAttribute("aria-busy", "true");
    const sets = s.cmp ? [["A", s.a], ["B", s.b]] : [["", s.a]];
    const outcomes = await Promise.all(sets.map(([, knobs]) => search(s, knobs, signal)));
    results.removeAttribute("aria-busy");
    if (signal.aborted) return;
    const terms = queryTerms(s.q);
    const columns = sets.map(([label], i) => ({ label, ...outcomes[i] }));
    const ctxView = { terms, names, signal, columns, query: s.q };
    replace(results, h("div", { class: ["result-columns", s.cmp ? "two" : null] }, columns.map((col, i) => resultColumn(col, i, ctxView))));
    replace(status, columns.map((c) => summary(c)).join(" · "));
    status.classList.toggle("error", columns.some((c) => c.error));
  }

  if (state.q) run(state);
}

// ---- state in the hash ------------------------------------------------------------------

function readState(q) {
  const knobs = (prefix) => {
    const out = {};
    for (const [key, knob] of Object.entries(KNOB_KEYS)) {
      const v = q.get(prefix + key);
      if (v !== null && v !== "") out[knob] = v;
    }
    return out;
  };
  const ds = q.get("ds");
  const col = (q.get("col") || "").split(",").filter(Boolean);
  return { q: q.get("q") || "", ds: ds === null ? null : ds.split(",").filter(Boolean), col, cmp: q.get("cmp") === "1", a: knobs(""), b: knobs("b.") };
}

function pushState(s) {
  const q = new URLSearchParams();
  q.set("q", s.q);
  if (s.ds) q.set("ds", s.ds.join(","));
  if (s.col && s.col.length) q.set("col", s.col.join(","));
  if (s.cmp) q.set("cmp", "1");
  const put = (prefix, knobs) => {
    for (const [key, knob] of Object.entries(KNOB_KEYS)) {
      if (knobs[knob] !== undefined && knobs[knob] !== "") q.set(prefix + key, knobs[knob]);
    }
  };
  put("", s.a);
  if (s.cmp) put("b.", s.b);
  const hash = `#/sandbox?${q}`;
  // pushState fires no hashchange: the screen stays; Back fires one and re-renders from the hash
  if (location.hash === hash) history.replaceState(null, "", hash);
  else history.pushState(null, "", hash);
}

// ---- the form ---------------------------------------------------------------------------

/**
 * The metadata fields of the datasets the key reads (GET …/fields; the first MAX_FIELD_LOOKUPS),
 * sorted by name; a name with two types in two datasets is left to the builder's "field…" entry.
 */
async function datasetFields(datasets, signal) {
  const one = (d) => api("GET", `/api/v1/datasets/${encodeURIComponent(d.id)}/fields`, { signal }).then((out) => out.fields || [], () => []);
  const lists = await Promise.all(datasets.slice(0, MAX_FIELD_LOOKUPS).map(one));
  const types = new Map();
  for (const f of lists.flat()) types.set(f.name, types.has(f.name) && types.get(f.name) !== f.type ? null : f.type);
  return [...types].filter(([, type]) => type).map(([name, type]) => ({ name, type })).sort((a, b) => a.name.localeCompare(b.name));
}

function datasetPicker(datasets, chosen) {
  const boxes = datasets.map((d) =>
    h("label", { class: "check" }, h("input", { type: "checkbox", value: d.id, checked: !chosen || chosen.includes(d.id) }), ` ${d.name}`),
  );
  const setAll = (on) => boxes.forEach((b) => (b.firstChild.checked = on));
  const el = h(
    "fieldset",
    { class: "dataset-picker" },
    h("legend", {}, "Datasets"),
    datasets.length
      ? [
          h("div", { class: "checks" }, boxes),
          h(
            "div",
            { class: "actions" },
            h("button", { type: "button", class: "small", onclick: () => setAll(true) }, "All"),
            h("button", { type: "button", class: "small", onclick: () => setAll(false) }, "None"),
          ),
        ]
      : h("p", { class: "muted" }, "No dataset to search yet. ", h("a", { href: "#/datasets" }, "Create one and upload files"), "."),
  );
  // every box checked: no dataset_ids (the key's every readable dataset, new ones included)
  const read = () => {
    const ids = boxes.filter((b) => b.firstChild.checked).map((b) => b.firstChild.value);
    return ids.length === boxes.length ? null : ids;
  };
  return { el, read };
}

function knobPanel(id, values, caps) {
  const modes = (caps && Array.isArray(caps.modes) && caps.modes.length ? caps.modes : MODES).map(String);
  const fallback = caps && caps.default_mode && modes.includes(caps.default_mode) ? caps.default_mode : "hybrid";
  const mode = h("select", { name: `${id}-mode` }, modes.map((m) => h("option", { value: m, selected: (values.mode || fallback) === m }, m)));
  const k = h("input", { type: "number", name: `${id}-k`, min: 1, max: 100, step: 1, value: values.k || "5", inputmode: "numeric" });
  const defaultW = caps && typeof caps.vector_weight === "number" ? caps.vector_weight : 0.6;
  const weight = slider(`${id}-w`, values.vector_weight, defaultW);
  const diversity = slider(`${id}-div`, values.diversity, 0);
  const perFile = h("input", { type: "number", name: `${id}-mpf`, min: 1, max: 100, step: 1, value: values.max_per_file || "", placeholder: "no cap", inputmode: "numeric" });
  const minScore = h("input", { type: "number", name: `${id}-min`, min: 0, max: 1, step: 0.01, value: values.min_score || "", placeholder: "server default", inputmode: "decimal" });
  const rerankers = caps && Array.isArray(caps.rerankers) ? caps.rerankers.map((r) => (typeof r === "string" ? r : r && r.name)).filter(Boolean) : [];
  const rerank = rerankers.length
    ? h(
        "select",
        { name: `${id}-rr` },
        h("option", { value: "" }, "dataset's default"),
        h("option", { value: "false", selected: values.rerank === "false" }, "off"),
        rerankers.map((r) => h("option", { value: r, selected: values.rerank === r }, r)),
      )
    : null;
  const fusion = caps && caps.fusion ? ` (${caps.fusion} fusion)` : "";
  const weightField = field("Dense share", weight.el, `hybrid only${fusion}: 0 = BM25 alone, 1 = dense alone`);
  const filter = h("textarea", { name: `${id}-f`, rows: 3, spellcheck: "false", class: "filter-json", placeholder: FILTER_HINT }, values.filter || "");
  const builder = filterBuilder(id, filter, "keys: tags, fields.<name>, language, file_id, name, source, dataset; must / should / must_not");
  const filterField = builder.el;
  filterField.classList.add("filter-field");
  const syncMode = () => (weightField.hidden = mode.value !== "hybrid");
  mode.addEventListener("change", syncMode);
  syncMode();
  const legend = h("legend", {}, id === "a" ? "Knobs" : "Knobs B");
  const el = h(
    "fieldset",
    { class: ["knobs", `knobs-${id}`] },
    legend,
    h(
      "div",
      { class: "knob-grid" },
      field("Mode", mode),
      field("Results (k)", k),
      weightField,
      field("Diversity (MMR)", diversity.el, "0 keeps the ranking"),
      field("Max per file", perFile),
      field("Min relevance", minScore, "0–1; drops hits below it"),
      rerank ? field("Reranker", rerank) : null,
      filterField,
    ),
  );
  const read = () => ({
    mode: mode.value,
    k: k.value,
    vector_weight: weight.read(),
    diversity: diversity.read(),
    max_per_file: perFile.value,
    min_score: minScore.value,
    rerank: rerank ? rerank.value : "",
    filter: filter.value.trim(),
  });
  return { el, legend, read, setFields: builder.setFields };
}

/** A 0–1 range with its value shown; read() is "" until the user moves it (server default). */
function slider(name, value, fallback) {
  let touched = value !== undefined && value !== "";
  const input = h("input", { type: "range", id: `sb-${name}`, name, min: 0, max: 1, step: 0.05, value: touched ? value : String(fallback) });
  const out = h("output", { for: input.id, class: "slider-value" }, Number(input.value).toFixed(2));
  input.addEventListener("input", () => {
    touched = true;
    out.textContent = Number(input.value).toFixed(2);
  });
  return { el: h("span", { class: "slider" }, input, out), read: () => (touched ? input.value : "") };
}

/** The service key's collections outside any dataset (Open WebUI's, the CLI's): none by default. */
function collectionPicker(collections, chosen) {
  const boxes = collections.map((c) =>
    h("label", { class: "check" }, h("input", { type: "checkbox", value: c.name, checked: chosen.includes(c.name) }), ` ${c.name} `, h("small", { class: "muted" }, `(${c.chunks} chunks)`)),
  );
  const el = h(
    "fieldset",
    { class: "dataset-picker" },
    h("legend", {}, "Other collections"),
    h("p", { class: "hint" }, "Collections outside any dataset: Open WebUI's files and knowledge bases, and the CLI's."),
    h("div", { class: "checks" }, boxes),
  );
  return { el, read: () => boxes.filter((b) => b.firstChild.checked).map((b) => b.firstChild.value) };
}

// ---- searching --------------------------------------------------------------------------

async function search(s, knobs, signal) {
  const body = { query: s.q, k: int(knobs.k, 5), mode: knobs.mode || "hybrid", explain: true };
  const scope = s.scope || { dataset_ids: s.ds };
  if (scope.dataset_ids && (scope.dataset_ids.length || !scope.collection_names)) body.dataset_ids = scope.dataset_ids;
  if (scope.collection_names) body.collection_names = scope.collection_names;
  if (knobs.vector_weight !== undefined && knobs.vector_weight !== "" && body.mode === "hybrid") body.vector_weight = Number(knobs.vector_weight);
  if (knobs.diversity) body.diversity = Number(knobs.diversity);
  if (knobs.max_per_file) body.max_per_file = int(knobs.max_per_file);
  if (knobs.min_score !== undefined && knobs.min_score !== "") body.min_score = Number(knobs.min_score);
  if (knobs.rerank) body.rerank = knobs.rerank === "false" ? false : knobs.rerank;
  if (knobs.filter) {
    try {
      body.filter = JSON.parse(knobs.filter);
    } catch (err) {
      return { body, hits: [], error: `INVALID_FILTER: the filter is not JSON (${err.message})` };
    }
  }
  const started = performance.now();
  try {
    const out = await api("POST", "/api/v1/search", { json: body, signal });
    const matched = Number.isInteger(out.filter_matched) ? out.filter_matched : null;
    return { body, hits: out.results || [], matched, timings: out.timings_ms || null, roundTrip: performance.now() - started };
  } catch (err) {
    if (signal.aborted) return { body, hits: [], aborted: true };
    return { body, hits: [], error: err instanceof ApiError ? err.describe() : String(err.message || err) };
  }
}

function int(v, fallback) {
  const n = Number.parseInt(v, 10);
  return Number.isFinite(n) ? n : fallback;
}

function hitKey(hit) {
  return hit.id || `${hit.dataset_id}/${hit.file_id}/${hit.split_id}`;
}

function summary(col) {
  const tag = col.label ? `${col.label}: ` : "";
  if (col.error) return `${tag}${col.error}`; // the server's code and message, not just "error"
  const n = col.hits.length;
  return `${tag}${n} hit${n === 1 ? "" : "s"} in ${Math.round(col.roundTrip || 0)} ms`;
}

// ---- results ----------------------------------------------------------------------------

function resultColumn(col, index, view) {
  const other = view.columns.length === 2 ? view.columns[1 - index] : null;
  const otherRanks = other ? new Map(other.hits.map((hit, i) => [hitKey(hit), i + 1])) : null;
  const heading = col.label ? `Results ${col.label}` : "Results";
  const describe = `${col.body.mode}, k ${col.body.k}` + knobText(col.body);
  const section = h("section", { class: "result-column", "aria-label": heading }, h("h2", {}, heading, " ", h("span", { class: "muted knob-text" }, describe)));
  if (col.error) {
    section.append(h("p", { class: "error", role: "alert" }, col.error));
    return section;
  }
  section.append(timingTable(col.timings, col.roundTrip));
  if (col.matched === 0) {
    section.append(h("p", { class: "empty-state filter-nothing", role: "status" }, "The filter matched no chunks: no chunk of these datasets has that metadata. Loosen or remove the filter."));
    return section;
  }
  if (col.matched !== null && col.matched !== undefined) section.append(h("p", { class: "muted filter-matched" }, `The filter admits ${fmtNumber(col.matched)} chunk${col.matched === 1 ? "" : "s"}.`));
  if (!col.hits.length) {
    const floor = col.body.min_score !== undefined ? ` above the relevance floor ${col.body.min_score}` : "";
    section.append(h("p", { class: "empty-state" }, `No hits${floor}. Try other words, another mode, or a lower min relevance.`));
    return section;
  }
  const maxSparse = Math.max(0, ...col.hits.map((x) => (x.scores && x.scores.sparse) || 0));
  const list = h("ol", { class: "hits" });
  col.hits.forEach((hit, i) => list.append(hitCard(hit, i + 1, { ...view, maxSparse, otherRanks, otherLabel: other && other.label })));
  section.append(list);
  return section;
}

function knobText(body) {
  const parts = [];
  if (body.vector_weight !== undefined) parts.push(`dense share ${body.vector_weight}`);
  if (body.diversity) parts.push(`diversity ${body.diversity}`);
  if (body.max_per_file) parts.push(`≤ ${body.max_per_file}/file`);
  if (body.min_score !== undefined) parts.push(`min ${body.min_score}`);
  if (body.rerank !== undefined) parts.push(`rerank ${body.rerank}`);
  if (body.filter !== undefined) parts.push("filtered");
  return parts.length ? `, ${parts.join(", ")}` : "";
}

function timingTable(timings, roundTrip) {
  const rows = [];
  for (const [stage, ms] of Object.entries(timings || {})) {
    rows.push(h("div", { class: ["timing", stage === "total" ? "total" : null] }, h("dt", {}, STAGES[stage] || stage.replaceAll("_", " ")), h("dd", {}, ms === null || ms === undefined ? "–" : `${fmtMs(ms)} ms`)));
  }
  rows.push(h("div", { class: "timing total" }, h("dt", {}, "round trip (browser)"), h("dd", {}, `${fmtMs(roundTrip)} ms`)));
  return h("dl", { class: "timings", "aria-label": "Latency by stage" }, rows);
}

function fmtMs(ms) {
  return ms >= 100 ? String(Math.round(ms)) : Number(ms).toFixed(1);
}

function hitCard(hit, rank, view) {
  const where = [pageLabel(hit.page), hit.headers && hit.headers.length ? hit.headers.join(" › ") : null].filter(Boolean).join(" · ");
  const dataset = view.names[hit.dataset_id] || hit.dataset_id || hit.collection;
  const canOpen = hit.dataset_id && hit.file_id;
  const neighbours = h("div", { class: "neighbours", hidden: true });
  const text = hitText(hit.content || "", view.terms);
  const card = h(
    "li",
    { class: "hit card", "data-rank": rank, "data-file": hit.name || "" },
    h(
      "header",
      { class: "hit-head" },
      h("span", { class: "rank", "aria-label": `rank ${rank}` }, `#${rank}`),
      h("strong", { class: "hit-name" }, hit.name || hit.source || hit.file_id || "(unnamed)"),
      where ? h("span", { class: "muted" }, where) : null,
      dataset ? h("span", { class: "badge" }, dataset) : null,
      compareBadge(hit, rank, view),
    ),
    h("div", { class: "hit-body" }, text.el, scoreTable(hit, view.maxSparse)),
    h(
      "div",
      { class: "actions" },
      text.toggle,
      canOpen && hit.split_id !== null && hit.split_id !== undefined ? neighbourButton(hit, neighbours, view) : null,
      canOpen ? h("a", { href: chunkHref(hit.dataset_id, hit.file_id, hit.split_id), class: "open-chunk" }, "Open in the chunk viewer") : null,
      hit.page_image ? pageButton(hit.page_image, hit.name || hit.source) : null,
      canOpen ? answersButton(hit, view) : null,
    ),
    neighbours,
  );
  return card;
}

/** "Answers it": the query, labelled with this hit's file, joins the dataset's evaluation set. */
function answersButton(hit, view) {
  const button = h("button", { type: "button", class: "small answers-it", title: "Add this query to the dataset's evaluation set, answered by this file" }, "Answers it");
  const note = h("span", { class: "muted answers-note", role: "status" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    const body = { query: view.query, files: [hit.file_id], source: "sandbox" };
    try {
      await api("POST", `/api/v1/datasets/${encodeURIComponent(hit.dataset_id)}/evalset`, { json: body, signal: view.signal });
      button.setAttribute("aria-pressed", "true");
      replace(note, "Added to the evaluation set");
    } catch (err) {
      button.disabled = false;
      if (view.signal.aborted) return;
      replace(note, h("span", { class: "error" }, err instanceof ApiError ? err.describe() : String(err.message || err)));
    }
  });
  return h("span", { class: "answers" }, button, note);
}

/** The passage of the chunk that matched (matchWindow), the whole chunk a click away. */
function hitText(content, terms) {
  const el = h("p", { class: "hit-text" });
  const { start, end } = matchWindow(content, terms);
  if (start === 0 && end === content.length) return { el: append(el, highlight(content, terms)), toggle: null };
  const toggle = h("button", { type: "button", class: "small", "aria-expanded": "false" }, "Whole chunk");
  const show = (whole) => {
    toggle.setAttribute("aria-expanded", String(whole));
    el.classList.toggle("whole", whole);
    if (whole) replace(el, highlight(content, terms));
    else replace(el, start > 0 ? "… " : null, highlight(content.slice(start, end), terms), end < content.length ? " …" : null);
  };
  toggle.addEventListener("click", () => show(toggle.getAttribute("aria-expanded") !== "true"));
  show(false);
  return { el, toggle };
}

/** After a search from the form, the status line and results come into view (a phone's form is taller than its screen). */
function bringIntoView(el, signal) {
  if (signal.aborted) return;
  const box = el.getBoundingClientRect();
  if (box.top >= 0 && box.top < innerHeight * 0.6) return;
  const smooth = !matchMedia("(prefers-reduced-motion: reduce)").matches;
  el.scrollIntoView({ block: "start", behavior: smooth ? "smooth" : "auto" });
}

function compareBadge(hit, rank, view) {
  if (!view.otherRanks) return null;
  const there = view.otherRanks.get(hitKey(hit));
  if (!there) return h("span", { class: "badge only" }, `only here`);
  const moved = there - rank; // > 0: ranks better here than in the other list
  const arrow = moved > 0 ? `▲${moved}` : moved < 0 ? `▼${-moved}` : "=";
  const text = `also #${there} in ${view.otherLabel} (${arrow})`;
  return h("span", { class: "badge both", title: moved ? `${Math.abs(moved)} place(s) ${moved > 0 ? "higher" : "lower"} here` : "same rank" }, text);
}

function scoreTable(hit, maxSparse) {
  const s = hit.scores || {};
  const values = { dense: s.dense, sparse: s.sparse, fused: s.fused, rerank: s.rerank, relevance: hit.relevance, score: hit.score };
  const rows = SCORE_ROWS.filter(([key]) => hit.scores || key === "relevance" || key === "score").map(([key, label]) => {
    const v = values[key];
    const known = v !== null && v !== undefined;
    const max = key === "sparse" ? maxSparse || 1 : 1;
    return h(
      "tr",
      { "data-score": key },
      h("th", { scope: "row" }, label),
      h("td", { class: "num" }, known ? fmtScore(v) : "–"),
      h("td", { class: "bar" }, known ? h("meter", { min: 0, max, value: Math.max(0, v), "aria-hidden": "true" }) : null),
    );
  });
  return h("table", { class: "scores" }, h("caption", {}, "Score breakdown"), h("tbody", {}, rows));
}

function neighbourButton(hit, box, view) {
  const button = h("button", { type: "button", class: "small", "aria-expanded": "false" }, "Neighbours");
  let loaded = false;
  button.addEventListener("click", async () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    box.hidden = !open;
    if (!open || loaded) return;
    replace(box, h("p", { class: "loading" }, "Loading the surrounding chunks…"));
    const path = `/api/v1/datasets/${encodeURIComponent(hit.dataset_id)}/files/${encodeURIComponent(hit.file_id)}/chunks?around=${encodeURIComponent(hit.split_id)}&radius=2`;
    try {
      const out = await api("GET", path, { signal: view.signal });
      loaded = true;
      const chunks = [...(out.chunks || [])].sort((x, y) => x.split_id - y.split_id);
      replace(
        box,
        h("h3", {}, "Surrounding chunks"),
        h(
          "ol",
          { class: "neighbour-list" },
          chunks.map((c) =>
            h(
              "li",
              { class: ["neighbour", c.split_id === hit.split_id ? "current" : null], "aria-current": c.split_id === hit.split_id ? "true" : null },
              h("span", { class: "muted" }, `chunk ${c.split_id}`, c.split_id === hit.split_id ? " (this hit)" : "", pageLabel(c.page) ? ` · ${pageLabel(c.page)}` : ""),
              h("p", {}, highlight(c.content || "", view.terms)),
            ),
          ),
        ),
      );
    } catch (err) {
      if (view.signal.aborted) return;
      replace(box, h("p", { class: "error", role: "alert" }, err instanceof ApiError ? err.describe() : String(err.message || err)));
    }
  });
  return button;
}

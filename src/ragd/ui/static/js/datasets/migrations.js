// The Migrations tab: a dataset's moves to another dense model or chunking while it keeps serving
// (docs/knowledge-bases.md#migrations), newest first: state, source → target, times, why one is
// held, its job's progress while it builds, both versions' evaluation side by side, and the buttons
// its state allows (Switch, Rollback, Cancel; admins). Admins start one from the form above.

import { api, ApiError } from "../api.js";
import { confirmDialog, field, fmtNumber, fmtScore, fmtTime, h, replace, toast } from "../dom.js";
import { capabilities } from "../capabilities.js";
import { followJob, jobSummary } from "./jobs.js";

const STRATEGIES = [
  ["", "keep current"],
  ["token", "token (tokens)"],
  ["markdown", "markdown (tokens, by headings)"],
  ["sentence", "sentence (characters)"],
  ["recursive", "recursive (characters)"],
  ["manual", "manual (characters)"],
];
const STATE_WORDS = { rolled_back: "rolled back" };
const HELD_WORDS = {
  manual: "waits for a switch",
  failed_files: "held: files failed in the new version",
  regression: "held: the evaluation got worse",
};
const OVERRIDE = new Set(["failed_files", "regression"]);
const POLL_MS = 2000;

function describe(err) {
  return err instanceof ApiError ? err.describe() : String((err && err.message) || err);
}

/** "token · 256 / 32 overlap", or "server default". */
export function chunkingWords(c) {
  if (!c || !c.strategy) return c && c.size ? `default · ${c.size}` : "server default";
  return `${c.strategy}${c.size ? ` · ${c.size}` : ""}${c.overlap ? ` / ${c.overlap} overlap` : ""}`;
}

function stateBadge(m) {
  const cls = { building: "running", switched: "succeeded", rolled_back: "cancelled" }[m.state] || m.state;
  return h("span", { class: ["badge", `badge-${cls}`, "migration-state"], "data-state": m.state }, STATE_WORDS[m.state] || m.state);
}

export function migrationsPanel(ctx, dataset, { onChange } = {}) {
  const { session, signal } = ctx;
  const base = `/api/v1/datasets/${encodeURIComponent(dataset.id)}/migrations`;
  const admin = session.can_admin;
  const list = h("div", { class: "migration-list", "aria-live": "polite" });
  const followed = new Map(); // migration id → its job's latest JSON (while it builds)
  const ended = new Set(); // the jobs followed to their end (the list's polling takes over)
  const progressEls = new Map(); // migration id → the element showing it (of the latest render)
  let timer = null;
  let loading = false;

  // ---- the start form (admins) -----------------------------------------------------------------
  const embedding = h("select", { name: "mig-embedding" }, h("option", { value: "" }, "keep current"));
  const strategy = h("select", { name: "mig-strategy" }, STRATEGIES.map(([v, label]) => h("option", { value: v }, label)));
  const size = h("input", { type: "number", name: "mig-size", min: 16, step: 1, inputmode: "numeric", placeholder: "keep current" });
  const overlap = h("input", { type: "number", name: "mig-overlap", min: 0, step: 1, inputmode: "numeric", placeholder: "keep current" });
  const autoSwitch = h("input", { type: "checkbox", name: "mig-auto", checked: true });
  const maxRegression = h("input", { type: "number", name: "mig-maxreg", min: 0, max: 1, step: 0.01, inputmode: "decimal", placeholder: "server default" });
  const startBtn = h("button", { type: "submit", class: "primary" }, "Start migration");
  const formStatus = h("p", { class: "migration-form-status", role: "status", "aria-live": "polite" });
  const form = admin
    ? h(
        "form",
        { class: "migration-form card", "aria-labelledby": "migration-form-title" },
        h("h3", { id: "migration-form-title" }, "Start a migration"),
        h("p", { class: "muted" }, "The new version is built beside the current one, which serves every search until the switch; the old one is kept for an instant rollback."),
        h(
          "div",
          { class: "knob-grid" },
          field("Dense model", embedding),
          field("Chunking strategy", strategy),
          field("Chunk size", size),
          field("Overlap", overlap),
          field("Max regression", maxRegression, "nDCG@10 drop a switch accepts"),
        ),
        h("label", { class: "check" }, autoSwitch, "Switch by itself when complete and not worse"),
        h("div", { class: "actions" }, startBtn),
        formStatus,
      )
    : null;

  if (form) {
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const body = { auto_switch: autoSwitch.checked };
      if (embedding.value) body.embedding = embedding.value;
      if (maxRegression.value !== "") body.max_regression = Number(maxRegression.value);
      startBtn.disabled = true;
      formStatus.classList.remove("error");
      replace(formStatus, "Starting…");
      try {
        const chunking = wantedChunking();
        if (chunking) body.chunking = chunking;
        await api("POST", base, { json: body, signal });
        replace(formStatus, "Migration started: the current version serves until it switches.");
        toast("Migration started");
        await load();
      } catch (err) {
        if (signal.aborted) return;
        formStatus.classList.add("error");
        replace(formStatus, describe(err));
      } finally {
        startBtn.disabled = false;
      }
    });
  }

  /** The chunking fields asked for; the server keeps the dataset's for the others. */
  function wantedChunking() {
    const changes = {};
    if (strategy.value) changes.strategy = strategy.value;
    if (size.value !== "") changes.size = Number.parseInt(size.value, 10);
    if (overlap.value !== "") changes.overlap = Number.parseInt(overlap.value, 10);
    return Object.keys(changes).length ? changes : null;
  }

  async function offerModels() {
    const caps = await capabilities(signal).catch(() => null);
    const names = (caps && caps.embedders) || [];
    const current = dataset.embedding || "default";
    for (const n of names) if (n !== current) embedding.append(h("option", { value: n }, n));
    if (current !== "default" && !names.includes("default")) embedding.append(h("option", { value: "default" }, "default"));
  }

  // ---- the list --------------------------------------------------------------------------------
  async function load() {
    if (loading) return;
    loading = true;
    try {
      const out = await api("GET", base, { signal });
      const found = out.migrations || [];
      render(found);
      for (const m of found) if (m.state === "building" && m.job_id && !followed.has(m.id) && !ended.has(m.job_id)) follow(m);
      schedule(found.some((m) => m.state === "building"));
    } catch (err) {
      if (!signal.aborted) replace(list, h("p", { class: "error", role: "alert" }, describe(err)));
    } finally {
      loading = false;
    }
  }

  function schedule(again) {
    clearTimeout(timer);
    timer = again && !signal.aborted ? setTimeout(load, POLL_MS) : null;
  }
  signal.addEventListener("abort", () => clearTimeout(timer));

  function follow(m) {
    followed.set(m.id, null);
    const show = (job) => {
      followed.set(m.id, job);
      const el = progressEls.get(m.id);
      if (el) replace(el, ...progress(job));
    };
    // its job's counts at once (GET one carries them), then live over the job's events
    api("GET", `${base}/${encodeURIComponent(m.id)}`, { signal })
      .then((one) => {
        if (one.job && !followed.get(m.id)) show(one.job);
      })
      .catch(() => null);
    followJob(
      m.job_id,
      show,
      signal,
    )
      .catch(() => null)
      .finally(() => {
        ended.add(m.job_id);
        if (signal.aborted) return;
        load();
        if (onChange) onChange(); // a switch changes the dataset's model or chunking
      });
  }

  function render(found) {
    progressEls.clear();
    if (!found.length) {
      replace(list, h("p", { class: "empty-state" }, admin ? "No migrations yet: start one above to move this dataset to another model or chunking." : "No migrations yet."));
      return;
    }
    replace(list, ...found.map(card));
  }

  function card(m) {
    const title = `Migration ${m.id.slice(0, 8)}`;
    const times = [
      ["Started", fmtTime(m.created_at)],
      m.switched_at ? ["Switched", fmtTime(m.switched_at)] : null,
      m.rolled_back_at ? ["Rolled back", fmtTime(m.rolled_back_at)] : null,
      m.retain_until && !m.removed_at && ["switched", "rolled_back"].includes(m.state) ? [m.state === "switched" ? "Old version kept until" : "New version kept until", fmtTime(m.retain_until)] : null,
      m.removed_at ? ["Spare version removed", fmtTime(m.removed_at)] : null,
    ].filter(Boolean);
    const facts = [
      ["From", version(m.source, m.serving === "source")],
      ["To", version(m.target, m.serving === "target")],
      ...times,
      m.failed_files ? ["Failed files", fmtNumber(m.failed_files)] : null,
    ].filter(Boolean);
    const why = m.held || m.message || m.error ? notice(m) : null;
    let progressBox = null;
    if (m.state === "building") {
      progressBox = h("div", { class: "migration-progress", "aria-label": `Progress of ${title}` });
      const job = followed.get(m.id);
      replace(progressBox, ...(job ? progress(job) : [h("small", { class: "muted" }, "Waiting for its job…")]));
      progressEls.set(m.id, progressBox);
    }
    return h(
      "article",
      { class: ["migration", "card"], "data-id": m.id, "data-state": m.state, "aria-labelledby": `mig-${m.id}` },
      h("header", { class: "migration-head" }, h("h3", { id: `mig-${m.id}` }, title), stateBadge(m), m.held ? h("span", { class: "badge badge-partial migration-held" }, HELD_WORDS[m.held] || m.held) : null),
      h("dl", { class: "migration-facts" }, facts.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v)))),
      progressBox,
      why,
      reports(m),
      admin ? buttons(m, title) : null,
    );
  }

  function version(v, serving) {
    return h("span", { class: "migration-version" }, `${v.embedding} · ${chunkingWords(v.chunking)}`, serving ? h("span", { class: "badge badge-ok" }, "serving") : null);
  }

  function notice(m) {
    const parts = [];
    if (m.error) parts.push(h("p", { class: "error" }, `${m.error.code}: ${m.error.message}`));
    else if (m.message && m.state === "ready") parts.push(h("p", { class: m.held && m.held !== "manual" ? "migration-why warn" : "migration-why muted" }, m.message));
    return parts.length ? h("div", { class: "migration-notice" }, parts) : null;
  }

  function buttons(m, title) {
    const out = [];
    const status = h("p", { class: "migration-status", role: "status", "aria-live": "polite" });
    const act = async (label, path, body, done) => {
      replace(status, `${label}…`);
      status.classList.remove("error");
      try {
        await api("POST", `${base}/${encodeURIComponent(m.id)}/${path}`, { json: body, signal });
        toast(done);
        formStatus.classList.remove("error");
        replace(formStatus); // a refused start said why; that has changed now
        await load();
        if (onChange) onChange();
      } catch (err) {
        if (signal.aborted) return;
        status.classList.add("error");
        replace(status, describe(err));
      }
    };
    if (m.state === "ready") {
      out.push(
        h("button", {
          type: "button",
          class: "primary",
          "aria-label": `Switch ${title}`,
          onclick: async () => {
            let body = {};
            if (OVERRIDE.has(m.held)) {
              const reason = m.held === "regression" ? "its evaluation got worse" : "files failed in the new version";
              if (!(await confirmDialog(`Switch anyway? It is held because ${reason}.`, { confirm: "Switch anyway", danger: true }))) return;
              body = { override: true };
            }
            await act("Switching", "switch", body, "Switched: the new version serves");
          },
        }, "Switch"),
      );
    }
    if (m.state === "switched" && !m.removed_at) {
      out.push(h("button", { type: "button", "aria-label": `Roll back ${title}`, onclick: () => act("Rolling back", "rollback", {}, "Rolled back: the old version serves") }, "Rollback"));
    }
    if (m.state === "building" || m.state === "ready") {
      out.push(
        h("button", {
          type: "button",
          class: "danger",
          "aria-label": `Cancel ${title}`,
          onclick: async () => {
            if (await confirmDialog("Cancel this migration? Its new version is removed; the current one keeps serving.", { confirm: "Cancel migration" })) await act("Cancelling", "cancel", {}, "Migration cancelled");
          },
        }, "Cancel"),
      );
    }
    return out.length ? h("div", { class: "migration-actions" }, h("div", { class: "actions" }, out), status) : null;
  }

  const el = h(
    "div",
    { class: "migrations" },
    h("p", { class: "muted" }, "Move this dataset to another dense model or chunking while it keeps answering: the new version is built beside the old one, evaluated on the dataset's evaluation set, then switched; a rollback serves the old one again at once."),
    form,
    list,
  );
  let started = false;
  return {
    el,
    shown: () => {
      if (!started && form) offerModels();
      started = true;
      return load();
    },
  };
}

/** A <progress> over the job's finished files and its words (done/total, rate, ETA). */
function progress(job) {
  const finished = (job.done || 0) + (job.failed || 0);
  const bar = h("progress", { max: Math.max(job.total || 0, 1), "aria-label": "Files built into the new version" });
  if (job.total) bar.value = finished;
  return [h("div", { class: ["job-progress", job.failed ? "has-failed" : null] }, bar, h("small", {}, jobSummary(job)))];
}

/** Both versions' evaluation side by side, or why there is none. */
function reports(m) {
  const r = m.reports || {};
  if (!r.old || !r.new) {
    if (m.state === "building") return null;
    return h("p", { class: "muted migration-no-eval" }, "Not evaluated: the dataset has no evaluation set (add labelled queries in the Evaluation tab).");
  }
  const row = (label, key) => h("tr", { "data-metric": key }, h("th", { scope: "row" }, label), h("td", { class: "num" }, fmtScore(r.old[key])), h("td", { class: "num" }, fmtScore(r.new[key])));
  return h(
    "table",
    { class: "data eval-metrics migration-eval" },
    h("caption", {}, `Evaluation set (${fmtNumber(r.queries)} ${r.queries === 1 ? "query" : "queries"}): ${(r.wins || []).length} won · ${(r.losses || []).length} lost`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "metric"), h("th", { scope: "col" }, "old version"), h("th", { scope: "col" }, "new version"))),
    h("tbody", {}, row("nDCG@10", "ndcg_at_10"), row(`recall@${r.new.k || 10}`, "recall_at_k"), row("MRR@10", "mrr_at_10")),
  );
}

// Jobs: every job the key can see, live over SSE (GET /api/v1/events), filtered by status; one
// job's page with its items' stages and errors. Writers cancel queued/running jobs and retry
// finished ones that left work undone (POST /api/v1/jobs/{id}/cancel | retry).

import { api, ApiError, stream } from "../api.js";
import { errorHelp, followJob, isFinished, splitHint } from "../datasets/jobs.js";
import { fmtEta, fmtRate } from "../datasets/rate.js";
import { badge, confirmDialog, dataTable, field, fmtDuration, fmtNumber, fmtTime, h, replace, toast } from "../dom.js";
import { JOB_STATUSES, jobBadge, jobWord, retryWords } from "../datasets/status.js";

// the statuses, then "with failures": the jobs that ended partly failed or failed
const STATUSES = [...JOB_STATUSES, "failures"];
const matches = (job, filter) => !filter || job.status === filter || (filter === "failures" && ["partial", "failed"].includes(job.status));
const RECONNECT_MS = 2000;

export async function render(main, ctx) {
  if (ctx.params.jobId) return renderJob(main, ctx, ctx.params.jobId);
  return renderList(main, ctx);
}

// ---- shared pieces ----------------------------------------------------------------------------

const shortId = (id) => String(id || "").slice(0, 8);
const kindLabel = (kind) => ({ ingest: "Ingest", reindex: "Re-index", sync: "Sync", migrate: "Migration" })[kind] || kind || "Job";
const canCancel = (job) => job.status === "queued" || job.status === "running";
const canRetry = (job, items) => {
  if (!isFinished(job) || (job.status === "succeeded" && !job.failed)) return false;
  if (job.kind === "sync") return true; // a sync reads its source again
  // the list has no items, but the stream's `errors` are every failed item when there are few
  const known = items || (Array.isArray(job.errors) && job.errors.length === job.failed && job.done + job.failed === job.total ? job.errors.map((error) => ({ stage: "failed", error })) : null);
  if (!known) return true; // the server decides (409 when nothing can succeed again)
  return known.some((i) => (i.stage === "failed" && !(i.error && i.error.permanent)) || !["done", "unchanged", "deleted", "failed"].includes(i.stage));
};

/** The failed items a retry would skip, by code: "3 UNSUPPORTED_TYPE, 2 EMPTY_DOCUMENT". */
function permanentCodes(items) {
  const counts = {};
  for (const i of items || []) if (i.stage === "failed" && i.error && i.error.permanent) counts[i.error.code] = (counts[i.error.code] || 0) + 1;
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([code, n]) => `${fmtNumber(n)} ${code}`)
    .join(", ");
}

/** <progress> over the job's finished items (indeterminate while the total is unknown) and its words. */
function progressOf(job) {
  const finished = (job.done || 0) + (job.failed || 0);
  const bar = h("progress", { max: Math.max(job.total || 0, 1), "aria-label": `Progress of ${kindLabel(job.kind)} job ${shortId(job.id)}` });
  if (job.total || isFinished(job)) bar.value = job.total ? finished : 1;
  const words = [`${fmtNumber(finished)} of ${fmtNumber(job.total)}`];
  if (job.failed) words.push(`${fmtNumber(job.failed)} failed`);
  return h("div", { class: ["job-progress", job.failed ? "has-failed" : null] }, bar, h("small", {}, words.join(" · ")));
}

function pace(job) {
  if (isFinished(job)) return job.started_at && job.finished_at ? `took ${fmtDuration(job.finished_at - job.started_at)}` : "–";
  const rate = job.rate_per_s ? fmtRate(job.rate_per_s, job.kind === "sync" ? "items" : "files") : "–";
  const eta = fmtEta(job.eta_s);
  return eta ? `${rate} · ${eta}` : rate;
}

function statusBadge(job) {
  if (job.cancel_requested && !isFinished(job)) return jobBadge(job.status, "· cancelling");
  return jobBadge(job.status);
}

/** Confirm, cancel, and hand back the job as the server now has it (null: not done). */
async function cancelJob(job) {
  const question = `Cancel the ${kindLabel(job.kind).toLowerCase()} job ${shortId(job.id)}? Files in flight finish; the rest end “CANCELLED”.`;
  if (!(await confirmDialog(question, { confirm: "Cancel job" }))) return null;
  try {
    const out = await api("POST", `/api/v1/jobs/${encodeURIComponent(job.id)}/cancel`);
    toast(`Cancelling job ${shortId(job.id)}.`, "ok");
    return out;
  } catch (err) {
    toast(err instanceof ApiError ? err.describe() : String(err), "error");
    return null;
  }
}

/** Retry: the new job (202), or null after a toast saying why not (409: nothing to retry…). */
async function retryJob(job) {
  try {
    const fresh = await api("POST", `/api/v1/jobs/${encodeURIComponent(job.id)}/retry`);
    toast(`${retryWords(fresh)} Job ${shortId(fresh.id)} queued.`, "ok");
    return fresh;
  } catch (err) {
    toast(err instanceof ApiError ? err.describe() : String(err), "error");
    return null;
  }
}

function jobActions(job, { onCancel, onRetry }, items) {
  const label = `${kindLabel(job.kind)} job ${shortId(job.id)}`;
  return [
    canCancel(job) && !job.cancel_requested
      ? h("button", { type: "button", class: "small danger", "aria-label": `Cancel ${label}`, onclick: () => onCancel(job) }, "Cancel")
      : null,
    canRetry(job, items) ? h("button", { type: "button", class: "small", "aria-label": `Retry ${label}`, onclick: () => onRetry(job) }, "Retry") : null,
  ].filter(Boolean);
}

async function datasetNames(signal) {
  try {
    const listed = await api("GET", "/api/v1/datasets", { signal });
    return Object.fromEntries((listed.datasets || []).map((d) => [d.id, d.name]));
  } catch (err) {
    if (err instanceof ApiError && err.status !== 401) return {};
    throw err;
  }
}

function datasetLink(job, names) {
  if (!job.dataset_id) return "–";
  const name = names[job.dataset_id] || `dataset ${shortId(job.dataset_id)}`;
  return h("a", { href: `#/datasets/${encodeURIComponent(job.dataset_id)}`, class: "job-dataset" }, name);
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

// ---- the list ---------------------------------------------------------------------------------

/** One row per job, updated in place so a focused button survives a live update. */
function jobRow(names, handlers) {
  const cells = {
    job: h("td", { "data-label": "Job" }),
    dataset: h("td", { "data-label": "Dataset" }),
    status: h("td", { "data-label": "Status" }),
    progress: h("td", { "data-label": "Progress", class: "job-progress-cell" }),
    chunks: h("td", { "data-label": "Chunks", class: "num" }),
    pace: h("td", { "data-label": "Rate · ETA" }),
    created: h("td", { "data-label": "Created" }),
    actions: handlers ? h("td", { "data-label": "Actions", class: "job-actions" }) : null,
  };
  const tr = h("tr", {}, Object.values(cells).filter(Boolean));
  let actionsKey = null;
  const update = (job) => {
    tr.dataset.jobId = job.id;
    tr.dataset.status = job.status;
    replace(
      cells.job,
      h("a", { href: `#/jobs/${encodeURIComponent(job.id)}`, class: "job-link" }, `${kindLabel(job.kind)} ${shortId(job.id)}`),
      job.attempts > 1 ? h("small", { class: "muted" }, ` attempt ${job.attempts}`) : null,
    );
    replace(cells.dataset, datasetLink(job, names));
    const firstError = (job.errors || [])[0];
    replace(
      cells.status,
      statusBadge(job),
      job.error && job.error.code !== String(job.status).toUpperCase() ? h("small", { class: "job-error-code" }, job.error.code) : null,
      !job.error && firstError ? h("small", { class: "job-error-code" }, firstError.code) : null,
    );
    replace(cells.progress, progressOf(job));
    cells.chunks.textContent = fmtNumber(job.chunks);
    cells.pace.textContent = pace(job);
    replace(cells.created, h("time", { title: fmtTime(job.created_at) }, fmtTime(job.created_at, { relative: true })));
    const key = `${canCancel(job) && !job.cancel_requested}|${canRetry(job)}`;
    if (cells.actions && key !== actionsKey) {
      actionsKey = key; // rebuilt only when the choice changes: keyboard focus stays put otherwise
      replace(cells.actions, jobActions(job, handlers));
    }
  };
  return { tr, update };
}

async function renderList(main, ctx) {
  const { session, signal } = ctx;
  const jobs = new Map(); // id -> latest job
  const rows = new Map(); // id -> {tr, update}
  const names = {}; // dataset id -> name (null: asked, not readable)
  let drawing = false;
  let filter = STATUSES.includes(ctx.query.get("status")) ? ctx.query.get("status") : "";

  const handlers = session.can_write
    ? {
        onCancel: async (job) => {
          const out = await cancelJob(job);
          if (out) upsert(out);
        },
        onRetry: async (job) => {
          const fresh = await retryJob(job);
          if (fresh) upsert(fresh);
        },
      }
    : null;

  const tbody = h("tbody");
  const empty = h("tr", { class: "empty-row" }, h("td", { colspan: handlers ? 8 : 7, class: "empty" }, "No jobs yet."));
  const headers = ["Job", "Dataset", "Status", "Progress", "Chunks", "Rate · ETA", "Created", handlers ? "Actions" : null].filter(Boolean);
  const table = h(
    "table",
    { class: "data jobs-table" },
    h("caption", {}, "Jobs, newest first"),
    h("thead", {}, h("tr", {}, headers.map((label) => h("th", { scope: "col" }, label)))),
    tbody,
  );
  const select = h(
    "select",
    { name: "status", onchange: () => setFilter(select.value) },
    h("option", { value: "" }, "All statuses"),
    STATUSES.map((s) => h("option", { value: s, selected: s === filter }, jobWord(s))),
  );
  const count = h("p", { class: "muted jobs-count" });
  const live = h("p", { class: "live-state", "data-state": "connecting" }, "Connecting…");
  const announcer = h("p", { class: "admin-sr", role: "status", "aria-live": "polite" });

  function draw() {
    const shown = [...jobs.values()].filter((j) => matches(j, filter)).sort((a, b) => b.created_at - a.created_at);
    const want = shown.map((j) => rows.get(j.id).tr);
    // reorder only when needed: moving a row that holds focus would drop it
    const current = [...tbody.children].filter((tr) => tr !== empty);
    if (current.length !== want.length || current.some((tr, i) => tr !== want[i])) replace(tbody, want);
    if (!shown.length) {
      empty.firstChild.textContent = !filter ? "No jobs yet." : filter === "failures" ? "No jobs with failures." : `No ${jobWord(filter)} jobs.`;
      tbody.append(empty);
    }
    const counts = STATUSES.map((s) => [s, [...jobs.values()].filter((j) => matches(j, s)).length]);
    for (const option of select.options) {
      const n = option.value ? counts.find(([s]) => s === option.value)[1] : jobs.size;
      option.textContent = `${option.value ? jobWord(option.value) : "All statuses"} (${fmtNumber(n)})`;
    }
    count.textContent = `${fmtNumber(shown.length)} ${shown.length === 1 ? "job" : "jobs"} shown`;
  }

  function upsert(job, { announce = true } = {}) {
    const known = jobs.get(job.id);
    if (known && known.updated_at > job.updated_at) return; // an older event after a reconnect
    const merged = { ...known, ...job };
    if (known && announce && known.status !== merged.status) {
      announcer.textContent = `${kindLabel(merged.kind)} job ${shortId(merged.id)} ${jobWord(merged.status)}.`;
    }
    jobs.set(job.id, merged);
    if (merged.dataset_id && !(merged.dataset_id in names)) renameLater();
    if (!rows.has(job.id)) rows.set(job.id, jobRow(names, handlers));
    rows.get(job.id).update(merged);
    if (!drawing) {
      drawing = true; // one redraw per frame however many events arrived
      requestAnimationFrame(() => {
        drawing = false;
        draw();
      });
    }
  }

  let renaming = null;
  function renameLater() {
    // a job of a dataset created since the page opened: ask for the names once more
    if (renaming || signal.aborted) return;
    renaming = datasetNames(signal)
      .then((fresh) => {
        for (const id of Object.keys(fresh)) names[id] = fresh[id];
        for (const job of jobs.values()) {
          if (!(job.dataset_id in names)) names[job.dataset_id] = null; // gone, or not readable: asked once
          rows.get(job.id).update(job);
        }
      })
      .catch(() => {})
      .finally(() => setTimeout(() => (renaming = null), 5000));
  }

  function setFilter(value) {
    filter = value;
    history.replaceState(null, "", value ? `#/jobs?status=${encodeURIComponent(value)}` : "#/jobs");
    draw();
  }

  const setLive = (state, text) => {
    live.dataset.state = state;
    live.textContent = text;
  };

  async function follow() {
    // the stream starts with every job the key can see, then each change; a dropped stream is
    // opened again, and events older than what is shown are ignored (updated_at)
    while (!signal.aborted) {
      setLive("live", "Live");
      try {
        await stream(
          "GET",
          "/api/v1/events",
          ({ event, data }) => {
            if (event === "job" && data && typeof data === "object") upsert(data);
          },
          { signal },
        );
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ApiError && err.status === 401) return;
      }
      if (signal.aborted) return;
      setLive("reconnecting", "Reconnecting…");
      await sleep(RECONNECT_MS, signal);
      if (signal.aborted) return;
      try {
        const listed = await api("GET", "/api/v1/jobs?limit=200", { signal });
        for (const job of listed.jobs || []) upsert(job, { announce: false });
      } catch {
        // the next attempt tries again
      }
    }
  }

  const [listed, known] = await Promise.all([api("GET", "/api/v1/jobs?limit=200", { signal }), datasetNames(signal)]);
  Object.assign(names, known);
  main.append(
      h("div", { class: "admin-head" }, h("h1", {}, "Jobs"), live),
      h(
        "p",
        { class: "muted admin-lead" },
        "Indexing runs as jobs: uploads, re-indexing and source syncs. Progress updates live.",
      ),
      h("div", { class: "toolbar" }, field("Status", select), count),
      h("div", { class: "table-scroll" }, table),
      announcer,
    );
  for (const job of listed.jobs || []) upsert(job, { announce: false });
  draw();
  follow();
}

// ---- one job ----------------------------------------------------------------------------------

/** file id -> name for the job's dataset (an ingest item's key is its file's id); {} if unreadable. */
async function fileNames(datasetId, signal) {
  if (!datasetId) return {};
  try {
    const listed = await api("GET", `/api/v1/datasets/${encodeURIComponent(datasetId)}/files?limit=10000`, { signal });
    return Object.fromEntries((listed.files || []).map((f) => [f.id, f.name]));
  } catch (err) {
    if (err instanceof ApiError && err.status !== 401) return {};
    throw err;
  }
}

function itemColumns(job, files) {
  const name = (i) => files[i.file_id || i.key] || i.key;
  const cell = (i) => {
    const id = i.file_id || i.key;
    if (!files[id] || !job.dataset_id) return h("span", { class: "item-key" }, i.key);
    const href = `#/datasets/${encodeURIComponent(job.dataset_id)}/files/${encodeURIComponent(id)}`;
    return h("a", { href, class: "item-key" }, files[id]);
  };
  return [
    { key: "key", label: "Item", render: cell, sort: (i) => name(i).toLowerCase() },
    { key: "stage", label: "Stage", render: (i) => badge(i.stage) },
    { key: "chunks", label: "Chunks", render: (i) => h("span", { class: "num" }, fmtNumber(i.chunks)) },
    {
      key: "error",
      label: "Error",
      sort: (i) => (i.error ? `${i.error.code} ${i.error.message || ""}` : ""),
      render: (i) =>
        i.error
          ? h(
              "div",
              { class: "item-error" },
              h("span", { class: "error-code" }, i.error.code),
              i.error.message ? h("span", { class: "error-message" }, splitHint(i.error.message)[0]) : null,
              errorHelp(i.error).hint, // the hint once (the server's, else the UI's), long ones behind "More"
            )
          : "–",
    },
  ];
}

function summary(job, names) {
  const row = (label, value) => h("div", {}, h("dt", {}, label), h("dd", {}, value));
  return h(
    "dl",
    { class: "job-summary" },
    row("Status", statusBadge(job)),
    job.waiting && job.status === "queued" ? row("Waiting", h("span", { class: "muted job-waiting" }, job.waiting)) : null,
    row("Dataset", datasetLink(job, names)),
    row("Progress", progressOf(job)),
    row("Done", `${fmtNumber(job.done)} done · ${fmtNumber(job.failed)} failed · ${fmtNumber(job.total)} in all`),
    row("Chunks", fmtNumber(job.chunks)),
    row("Rate · ETA", pace(job)),
    row("Attempts", job.max_attempts ? `${fmtNumber(job.attempts)} of ${fmtNumber(job.max_attempts)}` : fmtNumber(job.attempts)),
    row("Created", fmtTime(job.created_at)),
    row("Started", fmtTime(job.started_at)),
    row("Finished", fmtTime(job.finished_at)),
    job.error ? row("Error", h("span", { class: "error" }, `${job.error.code}: ${job.error.message || ""}`)) : null,
  );
}

async function renderJob(main, ctx, jobId) {
  const { session, signal, navigate } = ctx;
  const path = `/api/v1/jobs/${encodeURIComponent(jobId)}`;
  let job;
  try {
    job = await api("GET", path, { signal });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    main.append(
      h("h1", {}, "Job not found"),
      h("p", {}, "No such job, or not one this key can see. "),
      h("a", { href: "#/jobs" }, "All jobs"),
    );
    return;
  }
  const [names, files] = await Promise.all([datasetNames(signal), fileNames(job.dataset_id, signal)]);
  const title = h("h1", { class: "job-title" });
  const summaryBox = h("div", { class: "job-summary-box" });
  const actions = h("div", { class: "actions job-page-actions" });
  const announcer = h("p", { class: "admin-sr", role: "status", "aria-live": "polite" });
  const retryNote = h("p", { class: "muted retry-note", hidden: true });
  const onlyFailed = h("input", { type: "checkbox", name: "only-failed" });
  const search = h("input", { type: "search", name: "item-filter", autocomplete: "off", placeholder: "File name, stage, error code…" });
  const table = dataTable(itemColumns(job, files), [], { caption: "Items of this job", empty: "No items yet." });
  table.classList.add("items-table");
  let items = job.items || [];
  let shownItems = "";
  let lastStatus = job.status;
  let actionsKey = null;

  const drawItems = () => {
    const rows = onlyFailed.checked ? items.filter((i) => i.error || i.stage === "failed") : items;
    const state = JSON.stringify(rows);
    if (state !== shownItems) {
      shownItems = state;
      table.setRows(rows);
    }
  };
  onlyFailed.addEventListener("change", drawItems);
  search.addEventListener("input", () => table.setFilter(search.value.trim()));

  const handlers = {
    onCancel: async (j) => {
      const out = await cancelJob(j);
      if (out) draw({ ...job, ...out }, null);
    },
    onRetry: async (j) => {
      const fresh = await retryJob(j);
      if (fresh) navigate(`/jobs/${encodeURIComponent(fresh.id)}`);
    },
  };

  const draw = (next, nextItems) => {
    job = { ...job, ...next };
    if (nextItems) items = nextItems;
    replace(title, `${kindLabel(job.kind)} job `, h("code", {}, shortId(job.id)));
    replace(summaryBox, summary(job, names));
    const key = `${canCancel(job) && !job.cancel_requested}|${canRetry(job, items)}`;
    if (session.can_write && key !== actionsKey) {
      actionsKey = key;
      replace(actions, jobActions(job, handlers, items));
    }
    const skipped = isFinished(job) && job.kind !== "sync" && !canRetry(job, items) ? permanentCodes(items) : "";
    retryNote.hidden = !skipped;
    retryNote.textContent = skipped ? `Nothing to retry: these failed files would fail the same way again (${skipped}). Fix them and upload them again.` : "";
    if (job.status !== lastStatus) {
      lastStatus = job.status;
      announcer.textContent = `Job ${jobWord(job.status)}: ${fmtNumber(job.done)} done, ${fmtNumber(job.failed)} failed.`;
    }
    drawItems();
  };

  main.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", h("span", {}, shortId(jobId))),
    h("div", { class: "admin-head" }, title, actions),
    h("p", { class: "muted mono job-id" }, job.id),
    summaryBox,
    retryNote,
    h("h2", {}, "Items"),
    h(
      "div",
      { class: "toolbar" },
      h("div", { class: "grow" }, field("Filter items", search)),
      h("label", { class: "switch only-failed" }, onlyFailed, "Only failed items"),
    ),
    h("div", { class: "table-scroll" }, table),
    announcer,
  );
  draw(job, items);
  if (!isFinished(job)) {
    followJob(job.id, (next, nextItems) => draw(next, nextItems), signal).catch(() => {});
  }
}

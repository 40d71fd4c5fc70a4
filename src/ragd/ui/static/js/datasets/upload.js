// The Upload tab: drop files (or choose them with the file input), send them in batches with
// per-file byte progress, then follow each batch's job over SSE: stage per file, rate, ETA, and
// how each file ended (indexed with its chunks, or failed with its code and hint). The rates are
// moving ones (rate.js) and the summary is redrawn every second, so the ETA never freezes.

import { ApiError, upload } from "../api.js";
import { isFinished } from "./jobs.js";
import { fmtBytes, fmtNumber, h } from "../dom.js";
import { errorHelp, followJob, jobSummary } from "./jobs.js";
import { fmtEta, fmtRate, movingRate } from "./rate.js";

const BATCH_FILES = 20;
const BATCH_BYTES = 20 * 1024 * 1024;

function batches(rows) {
  const out = [];
  let batch = [];
  let bytes = 0;
  for (const r of rows) {
    if (batch.length && (batch.length >= BATCH_FILES || bytes + r.file.size > BATCH_BYTES)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(r);
    bytes += r.file.size;
  }
  if (batch.length) out.push(batch);
  return out;
}

/** One file's row: name, size, a <progress> (bytes, then indexing), and what happened. */
function fileRow(file) {
  const bar = h("progress", { max: Math.max(file.size, 1), value: 0, "aria-label": `Progress of ${file.name}` });
  const state = h("span", { class: "upload-state" }, "waiting");
  const detail = h("div", { class: "upload-detail muted" });
  const el = h(
    "li",
    { class: "upload-row" },
    h("div", { class: "upload-name" }, h("span", { class: "name" }, file.name), h("small", { class: "muted" }, fmtBytes(file.size))),
    bar,
    h("div", { class: "upload-status" }, state, detail),
  );
  const row = { file, el, fileId: null, finished: false, sent: 0 };
  row.set = (word, kind, text, extra) => {
    state.textContent = word;
    state.className = `upload-state state-${kind || word}`;
    detail.replaceChildren(text || "", extra || "");
  };
  row.bytes = (sent) => {
    row.sent = Math.max(row.sent, Math.min(sent, file.size));
    bar.max = Math.max(file.size, 1);
    bar.value = Math.min(sent, file.size);
    row.set(sent >= file.size ? "uploaded" : "uploading", "uploading", `${fmtBytes(Math.min(sent, file.size))} of ${fmtBytes(file.size)}`);
  };
  row.notIndexed = () => {
    // a failed file is not in search: no full bar for it
    if (bar.parentNode) bar.replaceWith(h("span", { class: "upload-not-indexed muted" }, "not indexed"));
  };
  row.stage = (item) => {
    if (item.stage === "done" || item.stage === "unchanged") {
      bar.max = 1;
      bar.value = 1;
      row.finished = true;
      row.set("indexed", "indexed", item.stage === "unchanged" ? "unchanged" : `${fmtNumber(item.chunks)} ${item.chunks === 1 ? "chunk" : "chunks"}`);
    } else if (item.stage === "failed") {
      row.notIndexed();
      row.finished = true;
      const help = errorHelp(item.error);
      row.set("failed", "failed", help.text, help.hint);
    } else {
      bar.removeAttribute("value"); // indeterminate while the server works on it
      row.set(item.stage, "working", item.stage === "pending" ? "queued" : "");
    }
  };
  row.fail = (message) => {
    row.notIndexed();
    row.finished = true;
    row.set("failed", "failed", message);
  };
  return row;
}

export function uploadPanel(ctx, dataset, { onChange }) {
  const { session, signal } = ctx;
  const path = `/api/v1/datasets/${encodeURIComponent(dataset.id)}/files`;
  const list = h("ol", { class: "upload-list", "aria-label": "Files being uploaded" });
  const overallBar = h("progress", { max: 1, value: 0, "aria-label": "Overall progress" });
  const overallText = h("p", { class: "upload-summary", role: "status", "aria-live": "polite" });
  // the pace changes every second: outside the live region, so a screen reader is not flooded
  const overallPace = h("p", { class: "upload-pace muted" });
  const overall = h("div", { class: "upload-overall", hidden: true }, overallBar, overallText, overallPace);
  const jobs = new Map(); // job id → latest job
  const rows = [];
  const sentRate = movingRate(); // bytes sent, all files
  const doneRate = movingRate(); // files finished (indexed or failed)
  let ticker = null; // redraws the summary every second while anything is unfinished
  signal.addEventListener("abort", () => clearInterval(ticker));

  if (!session.can_write) {
    return { el: h("p", { class: "muted" }, "Your key may read this dataset but not add files to it.") };
  }

  const input = h("input", { type: "file", multiple: true, id: "upload-input", class: "file-input sr-only" });
  input.addEventListener("change", () => {
    start([...input.files]);
    input.value = "";
  });
  const zone = h(
    "div",
    { class: "dropzone" },
    h("p", { class: "dropzone-title" }, "Drop files here"),
    h("p", { class: "muted" }, "or"),
    h("label", { for: "upload-input", class: "file-label" }, "Choose files…"),
    input,
    h("p", { class: "hint" }, "PDF, Office, Markdown, HTML, text, CSV and more; many at once."),
  );
  for (const name of ["dragenter", "dragover"]) {
    zone.addEventListener(name, (e) => {
      e.preventDefault();
      zone.classList.add("over");
    });
  }
  zone.addEventListener("dragleave", (e) => {
    if (!zone.contains(e.relatedTarget)) zone.classList.remove("over");
  });
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    const dropped = [...((e.dataTransfer && e.dataTransfer.files) || [])];
    if (dropped.length) start(dropped);
  });

  function uploadingText(uploading) {
    const n = uploading.length;
    const size = uploading.reduce((b, r) => b + r.file.size, 0);
    const sent = uploading.reduce((b, r) => b + r.sent, 0);
    const all = rows.reduce((b, r) => b + r.file.size, 0);
    return {
      text: `Uploading ${fmtNumber(n)} ${n === 1 ? "file" : "files"}`,
      pace: [`${fmtBytes(sent)} of ${fmtBytes(size)} sent`, fmtRate(sentRate.rate(), "bytes"), fmtEta(sentRate.eta(all))],
    };
  }

  function draw(text, pace) {
    if (overallText.textContent !== text) overallText.textContent = text;
    overallPace.textContent = pace.filter(Boolean).join(" · ");
  }

  function showOverall() {
    overall.hidden = false;
    const all = [...jobs.values()];
    const uploading = rows.filter((r) => !r.fileId && !r.finished);
    const total = all.reduce((n, j) => n + (j.total || 0), 0);
    const finished = all.reduce((n, j) => n + (j.done || 0) + (j.failed || 0), 0);
    const finishedRows = rows.filter((r) => r.finished).length;
    sentRate.add(rows.reduce((b, r) => b + r.sent, 0));
    doneRate.add(finishedRows);
    overallBar.max = Math.max(rows.length, 1);
    overallBar.value = finishedRows;
    const busy = finishedRows < rows.length && !signal.aborted;
    if (busy && !ticker) ticker = setInterval(showOverall, 1000);
    if (!busy && ticker) {
      clearInterval(ticker);
      ticker = null;
    }
    if (!all.length) {
      const up = uploadingText(uploading);
      draw(`${up.text}…`, up.pace);
      return;
    }
    const merged = {
      kind: "ingest",
      status: all.every(isFinished) ? "succeeded" : "running",
      total,
      done: all.reduce((n, j) => n + (j.done || 0), 0),
      failed: all.reduce((n, j) => n + (j.failed || 0), 0),
      chunks: all.reduce((n, j) => n + (j.chunks || 0), 0),
    };
    if (busy) merged.status = "running";
    const up = uploading.length ? uploadingText(uploading) : null;
    // done when every row has ended (whatever words the jobs' outcomes use)
    const prefix = up ? `${up.text} · ` : busy || finished < total ? "Indexing: " : "Done: ";
    // the pace is measured here over the last seconds, up to now: a stall lengthens the ETA
    const indexing = busy ? [fmtRate(doneRate.rate(), "files"), fmtEta(doneRate.eta(rows.length))] : [];
    draw(prefix + jobSummary(merged), up ? up.pace : indexing);
  }

  async function send(batch) {
    const form = new FormData();
    for (const r of batch) form.append("files", r.file, r.file.name);
    const offsets = [];
    let at = 0;
    for (const r of batch) {
      offsets.push(at);
      at += r.file.size;
    }
    const answer = await upload(
      path,
      form,
      (sent, total) => {
        const scale = total ? at / total : 1; // multipart framing adds a little to every part
        batch.forEach((r, i) => r.bytes(Math.max(0, sent * scale - offsets[i])));
      },
      signal,
    );
    batch.forEach((r, i) => {
      r.bytes(r.file.size);
      const f = (answer.files || [])[i];
      r.fileId = f ? f.id : null;
      r.set("queued", "working", "waiting for the indexer");
    });
    return answer.job;
  }

  async function follow(batch, job) {
    jobs.set(job.id, job);
    showOverall();
    const byFile = new Map(batch.map((r) => [r.fileId, r]));
    await followJob(
      job.id,
      (latest, items) => {
        jobs.set(latest.id, latest);
        for (const item of items || []) {
          const row = byFile.get(item.file_id);
          if (row) row.stage(item);
        }
        showOverall();
        onChange();
      },
      signal,
    );
    for (const r of batch) if (!r.finished) r.fail("the job ended before this file");
    showOverall();
  }

  async function runBatch(batch) {
    let job;
    try {
      job = await send(batch);
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.code === "FILE_TOO_LARGE" && batch.length > 1) {
        // one file is over the limit: send them one by one so only that one fails
        await Promise.all(batch.map((r) => runBatch([r])));
        return;
      }
      for (const r of batch) r.fail(err instanceof ApiError ? err.describe() : String(err.message || err));
      showOverall();
      return;
    }
    follow(batch, job).catch(() => {}); // indexing runs while the next batch uploads
  }

  async function start(files) {
    if (!files.length) return;
    const added = files.map(fileRow);
    rows.push(...added);
    list.append(...added.map((r) => r.el));
    showOverall();
    for (const batch of batches(added)) {
      await runBatch(batch).catch(() => {});
      if (signal.aborted) return;
    }
  }

  const el = h("div", { class: "upload-panel" }, zone, overall, list);
  return { el };
}

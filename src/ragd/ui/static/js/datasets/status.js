// How a job ended and what a dataset holds, in words: the statuses the API sends
// (docs/knowledge-bases.md, "Jobs" and "Datasets") and the badges the screens show for them.

import { fmtNumber, h } from "../dom.js";

/** Job statuses in the order the filters list them, with the words shown for each. */
export const JOB_STATUSES = ["queued", "running", "succeeded", "partial", "failed", "cancelled"];
const JOB_WORDS = { partial: "partly failed", failures: "with failures" };

export function jobWord(status) {
  return JOB_WORDS[status] || String(status);
}

/** A job's status badge: "partly failed" for a job that ran to the end with failed items. */
export function jobBadge(status, extra) {
  return h("span", { class: ["badge", `badge-${String(status).toLowerCase()}`] }, jobWord(status), extra ? ` ${extra}` : null);
}

/** A dataset's status badge; with failed files beside searchable ones: "searchable · 5 failed". */
export function datasetBadge(d) {
  if (!d || !d.status) return "–";
  const failed = (d.files_by_status || {}).failed || 0;
  const word = d.status === "partial" ? `searchable · ${fmtNumber(failed)} failed` : d.status;
  const title = {
    partial: "Some files failed; the others are indexed and searchable.",
    error: "Every file failed: nothing in this dataset is searchable.",
  }[d.status];
  return h("span", { class: ["badge", `badge-${String(d.status).toLowerCase()}`], title }, word);
}

/** "Retrying 2 files; 3 skipped: 2 UNSUPPORTED_TYPE, 1 EMPTY_DOCUMENT (they would fail the same way again)." */
export function retryWords(out) {
  const r = (out && out.retry) || {};
  const n = r.retried ?? (out && out.total) ?? 0;
  const unit = `${out && out.kind === "sync" ? "item" : "file"}${n === 1 ? "" : "s"}`;
  const skipped = Object.entries(r.skipped || {});
  const count = skipped.reduce((sum, [, k]) => sum + k, 0);
  const head = `Retrying ${fmtNumber(n)} ${unit}`;
  if (!count) return `${head}.`;
  const codes = skipped.map(([code, k]) => `${fmtNumber(k)} ${code}`).join(", ");
  return `${head}; ${fmtNumber(count)} skipped: ${codes} (they would fail the same way again).`;
}

// Following a job: its counts over SSE (GET /api/v1/events?job_id=…), its items' stages from
// GET /api/v1/jobs/{id}, and the words the dataset screens use for both.

import { api, stream } from "../api.js";
import { fmtDuration, fmtNumber } from "../dom.js";

const FINISHED = new Set(["succeeded", "failed", "cancelled"]);

/** What to do about a file's error code (docs/errors.md), for the codes a file can end with. */
const HINTS = {
  EXTRACTION_FAILED: "the file is corrupt or could not be parsed: open it in its application and save it again",
  ENCRYPTED_DOCUMENT: "remove the password and upload it again",
  EMPTY_DOCUMENT: "the file has no text: nothing to index",
  EXTRACTION_UNUSABLE: "save it as PDF, DOCX or plain text, or give it the extension of its real format",
  EXTRACTION_CRASHED: "the reader died on this file: save it again or split it",
  UNSUPPORTED_TYPE: "ragd cannot read this kind of file",
  FILE_TOO_LARGE: "over the server's size limit: split the file",
  OCR_UNAVAILABLE: "scanned pages and no OCR engine on the server",
  FETCH_FAILED: "the page did not answer: its previous version stays indexed",
  CANCELLED: "the job was cancelled: re-index the file",
  WORKER_LOST: "the worker stopped: re-index the file",
  EMBEDDING_FAILED: "the embedding model failed: re-index once it is back",
  QDRANT_WRITE_FAILED: "the vector store refused the write: re-index",
  STORAGE_FULL: "the server's disk is full",
};

export function errorHint(code) {
  return HINTS[code] || null;
}

export function isFinished(job) {
  // the server says so (`finished`, every status to come included); a job made up here, by its status
  return Boolean(job) && (typeof job.finished === "boolean" ? job.finished : FINISHED.has(job.status));
}

/** "12 of 20 files · 1 failed · 804 chunks · 6.2 files/s · about 10 s left" */
export function jobSummary(job) {
  if (!job) return "";
  const finished = (job.done || 0) + (job.failed || 0);
  const parts = [`${fmtNumber(finished)} of ${fmtNumber(job.total)} ${job.kind === "sync" ? "items" : "files"}`];
  if (job.failed) parts.push(`${fmtNumber(job.failed)} failed`);
  parts.push(`${fmtNumber(job.chunks)} chunks`);
  if (job.rate_per_s) parts.push(`${job.rate_per_s.toFixed(job.rate_per_s < 10 ? 1 : 0)} /s`);
  if (!isFinished(job) && job.eta_s !== null && job.eta_s !== undefined) parts.push(`about ${fmtDuration(job.eta_s)} left`);
  if (job.error) parts.push(`${job.error.code}: ${job.error.message}`);
  return parts.join(" · ");
}

/**
 * Follow job `jobId` until it ends: onUpdate(job, items) on every change (items: null when only
 * the counts changed). Resolves with the final job (with its items). Stops quietly on `signal`.
 */
export async function followJob(jobId, onUpdate, signal) {
  const path = `/api/v1/jobs/${encodeURIComponent(jobId)}`;
  let ended = false;
  let busy = false;
  let again = false;
  const items = async () => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const full = await api("GET", path, { signal });
      if (!ended) onUpdate(full, full.items || []);
    } catch {
      // the next event asks again; the final read below settles it
    } finally {
      busy = false;
      if (again && !ended && !signal.aborted) {
        again = false;
        items();
      }
    }
  };
  try {
    await stream(
      "GET",
      `/api/v1/events?job_id=${encodeURIComponent(jobId)}`,
      ({ event, data }) => {
        if (event !== "job" || !data || typeof data !== "object") return;
        onUpdate(data, null);
        if (!isFinished(data)) items();
      },
      { signal },
    );
  } catch (err) {
    if (signal.aborted) return null;
    await poll(path, onUpdate, signal); // a proxy that buffers the stream: ask every second instead
  }
  ended = true;
  if (signal.aborted) return null;
  const final = await api("GET", path, { signal });
  onUpdate(final, final.items || []);
  return final;
}

async function poll(path, onUpdate, signal) {
  for (;;) {
    const job = await api("GET", path, { signal });
    if (isFinished(job)) return;
    onUpdate(job, job.items || []);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (signal.aborted) return;
  }
}

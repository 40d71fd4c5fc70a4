// Following a job: its counts over SSE (GET /api/v1/events?job_id=…), its items' stages from
// GET /api/v1/jobs/{id}, and the words the dataset screens use for both.

import { api, stream } from "../api.js";
import { fmtNumber, h } from "../dom.js";
import { fmtEta, fmtRate } from "./rate.js";

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
  OCR_UNAVAILABLE: "an image or a scanned PDF, and no OCR engine on the server",
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

const SHORT_HINT = 90; // a longer hint (the list of supported formats) waits behind "More"

/**
 * A file's or item's error as "CODE: message" and its hint, once: the server writes "message
 * (hint)", so its hint is split off and shown apart; only without one is the UI's own (HINTS)
 * used. A short hint is shown as is, a long one in a <details> ("More").
 */
export function errorHelp(error) {
  const [message, own] = splitHint((error && error.message) || "");
  const hint = own || errorHint(error && error.code);
  const text = `${(error && error.code) || "FAILED"}${message ? `: ${message}` : ""}`;
  if (!hint) return { text, hint: null };
  const small = h("small", { class: "hint" }, hint);
  return { text, hint: hint.length <= SHORT_HINT ? small : h("details", { class: "error-more" }, h("summary", {}, "More"), small) };
}

/** "message (hint)" → ["message", "hint"]; a message without a final parenthesis → [message, null]. */
export function splitHint(message) {
  const text = message.trim();
  if (!text.endsWith(")")) return [text, null];
  let depth = 0;
  for (let i = text.length - 1; i > 0; i--) {
    if (text[i] === ")") depth++;
    else if (text[i] === "(" && --depth === 0) {
      return text[i - 1] === " " && i > 1 ? [text.slice(0, i - 1).trim(), text.slice(i + 1, -1).trim()] : [text, null];
    }
  }
  return [text, null];
}

export function isFinished(job) {
  // the server says so (`finished`, every status to come included); a job made up here, by its status
  return Boolean(job) && (typeof job.finished === "boolean" ? job.finished : FINISHED.has(job.status));
}

/** "12 of 20 files · 1 failed · 804 chunks · 6.2 files/s · about 10 s left" */
export function jobSummary(job) {
  if (!job) return "";
  const finished = (job.done || 0) + (job.failed || 0);
  const unit = job.kind === "sync" ? "items" : "files";
  const parts = [`${fmtNumber(finished)} of ${fmtNumber(job.total)} ${unit}`];
  if (job.failed) parts.push(`${fmtNumber(job.failed)} failed`);
  parts.push(`${fmtNumber(job.chunks)} ${job.chunks === 1 ? "chunk" : "chunks"}`);
  if (job.rate_per_s) parts.push(fmtRate(job.rate_per_s, unit));
  if (!isFinished(job) && job.eta_s !== null && job.eta_s !== undefined) parts.push(fmtEta(job.eta_s));
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

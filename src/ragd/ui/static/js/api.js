// The UI's only way to the server: ragd's public API, with the session cookie.
//
// The sign-in's server-side session lives in an HttpOnly cookie that no script can read (it holds
// the session's random secret, never the key); requests carry `X-Ragd-UI: 1`, which tells the
// server to act for that session's key (and which no other site can make the browser send). A 401
// means the session ended (signed out, revoked, expired, or its key revoked): back to sign-in.

export class ApiError extends Error {
  constructor(status, code, message, hint, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.body = body;
  }

  /** "CODE: message (hint)" for a toast or an inline error. */
  describe() {
    return `${this.code ? `${this.code}: ` : ""}${this.message}${this.hint ? ` (${this.hint})` : ""}`;
  }
}

const HEADERS = { "X-Ragd-UI": "1", Accept: "application/json" };
let onUnauthorized = () => {};

export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/** ragd's error bodies, whatever the surface: {detail}, {error, code, hint}, OpenAI's {error: {...}}. */
async function toError(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  let code = null;
  let message = `${response.status} ${response.statusText}`;
  let hint = null;
  const detail = body && (body.detail ?? body);
  if (typeof detail === "string") {
    message = detail;
  } else if (Array.isArray(detail)) {
    message = detail.map((d) => `${(d.loc || []).slice(1).join(".")}: ${d.msg}`).join("; ");
    code = "INVALID_REQUEST";
  } else if (detail && typeof detail === "object") {
    const inner = typeof detail.error === "object" && detail.error ? detail.error : detail;
    code = inner.code ?? detail.code ?? null;
    message = (typeof inner.message === "string" && inner.message) || (typeof detail.error === "string" && detail.error) || message;
    hint = detail.hint ?? inner.hint ?? null;
  }
  return new ApiError(response.status, code, message, hint, body);
}

/**
 * api("GET", "/api/v1/datasets") -> parsed JSON (null for 204).
 * opts.json: a body sent as JSON; opts.body: FormData/Blob as is; opts.signal: AbortSignal.
 */
export async function api(method, path, opts = {}) {
  const headers = { ...HEADERS, ...(opts.headers || {}) };
  let body = opts.body;
  if (opts.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.json);
  }
  const response = await fetch(path, { method, headers, body, signal: opts.signal, credentials: "same-origin" });
  if (response.status === 401 && !opts.allow401) {
    onUnauthorized();
  }
  if (!response.ok) throw await toError(response);
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

/**
 * A binary answer (a page's image) as {blob, headers}: fetched here because an <img src> cannot
 * carry the UI header the session needs. Errors are ApiErrors, as for api().
 */
export async function fetchBlob(path, { signal } = {}) {
  const headers = { ...HEADERS, Accept: "image/*, application/json;q=0.5" };
  const response = await fetch(path, { method: "GET", headers, signal, credentials: "same-origin" });
  if (response.status === 401) onUnauthorized();
  if (!response.ok) throw await toError(response);
  return { blob: await response.blob(), headers: response.headers };
}

/**
 * Read a text/event-stream (the API's SSE) with fetch, so the request carries the UI header.
 * onEvent({event, data, id}) per event, data parsed as JSON when it is JSON. Returns when the
 * stream ends or `signal` aborts.
 */
export async function stream(method, path, onEvent, { json, signal } = {}) {
  const headers = { ...HEADERS, Accept: "text/event-stream" };
  let body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  const response = await fetch(path, { method, headers, body, signal, credentials: "same-origin" });
  if (response.status === 401) onUnauthorized();
  if (!response.ok) throw await toError(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (err) {
      if (signal && signal.aborted) return;
      throw err;
    }
    if (chunk.done) break;
    buffer += chunk.value.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = { event: "message", data: "", id: null };
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (name === "data") data.push(value);
        else if (name === "event") event.event = value;
        else if (name === "id") event.id = value;
      }
      if (!data.length) continue;
      event.data = data.join("\n");
      try {
        event.data = JSON.parse(event.data);
      } catch {
        // not JSON (OpenAI's "[DONE]"): passed as text
      }
      onEvent(event);
    }
  }
}

/** Upload one file with progress: onProgress(sentBytes, totalBytes). Resolves to the JSON answer. */
export function upload(path, formData, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    for (const [name, value] of Object.entries(HEADERS)) xhr.setRequestHeader(name, value);
    xhr.upload.addEventListener("progress", (e) => onProgress && onProgress(e.loaded, e.total));
    xhr.addEventListener("load", async () => {
      const response = new Response(xhr.response, {
        status: xhr.status,
        statusText: xhr.statusText,
        headers: { "content-type": xhr.getResponseHeader("content-type") || "" },
      });
      if (xhr.status === 401) onUnauthorized();
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.status === 204 ? null : response.json());
      else reject(await toError(response));
    });
    xhr.addEventListener("error", () => reject(new ApiError(0, "NETWORK", "the upload did not reach the server")));
    xhr.addEventListener("abort", () => reject(new ApiError(0, "ABORTED", "upload cancelled")));
    if (signal) signal.addEventListener("abort", () => xhr.abort());
    xhr.send(formData);
  });
}

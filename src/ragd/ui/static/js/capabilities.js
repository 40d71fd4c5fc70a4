// What the server can do (GET /api/v1/system → capabilities), for the screens that show knobs.
//
// An older server has no such route: null, and each screen falls back to what every ragd has.

import { api, ApiError } from "./api.js";

// What the sandbox and the chat offer to search: the server's capabilities, the datasets the key may
// read and, for the service key, the collections outside any dataset (Open WebUI's, the CLI's).
export async function searchable(ctx) {
  const { signal } = ctx;
  const [caps, listed, reach] = await Promise.all([
    capabilities(signal),
    api("GET", "/api/v1/datasets", { signal }),
    ctx.session.service ? api("GET", "/api/v1/collections", { signal }).catch(() => ({ collections: [] })) : { collections: [] },
  ]);
  return { caps, datasets: listed.datasets || [], collections: (reach.collections || []).filter((c) => !c.dataset_id) };
}

export async function capabilities(signal) {
  try {
    const system = await api("GET", "/api/v1/system", { signal });
    return system && typeof system.capabilities === "object" ? system.capabilities : null;
  } catch (err) {
    if (err instanceof ApiError && err.status !== 401) return null;
    throw err;
  }
}

/** The chunk viewer's address for one chunk of a file (split_id optional). */
export function chunkHref(datasetId, fileId, splitId) {
  const base = `#/datasets/${encodeURIComponent(datasetId)}/files/${encodeURIComponent(fileId)}`;
  return splitId === null || splitId === undefined ? base : `${base}?split=${encodeURIComponent(splitId)}`;
}

/** A 0-based page of ragd's metadata as people count it, or null. */
export function pageLabel(page) {
  return page === null || page === undefined ? null : `page ${Number(page) + 1}`;
}

// The chunk viewer: a file's chunks in split_id order, with page and headings, a page at a time.
// #/datasets/:id/files/:fileId?offset=50 shows a page; ?split=7 the page holding chunk 7, marked
// and scrolled to (the sandbox and the chat link there). A chunk's Markdown is shown formatted
// (markdown.js: built as DOM, never parsed as HTML); "Raw text" shows every chunk as stored.

import { api, ApiError } from "../api.js";
import { chunkHref, pageLabel } from "../capabilities.js";
import { append, fmtNumber, h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { pageButton } from "../page_view.js";

const LIMIT = 50;

/** A chunk's text: its Markdown formatted, or (raw) exactly as stored. */
function chunkBody(c, raw) {
  return raw ? h("pre", { class: "chunk-text" }, c.content) : h("div", { class: "chunk-md" }, renderMarkdown(c.content));
}

function chunkCard(c, focused, fileName) {
  const meta = [pageLabel(c.page), (c.headers || []).length ? c.headers.join(" › ") : null].filter(Boolean);
  return h(
    "article",
    { class: ["chunk", focused ? "focused" : null], id: `chunk-${c.split_id}`, "aria-label": `Chunk ${c.split_id}`, tabindex: focused ? "-1" : null },
    h(
      "header",
      { class: "chunk-head" },
      h("span", { class: "chunk-no" }, `#${c.split_id ?? "–"}`),
      meta.length ? h("span", { class: "muted" }, meta.join(" · ")) : null,
      c.page_image ? pageButton(c.page_image, fileName) : null,
    ),
    chunkBody(c, false),
  );
}

function pager(href, offset, total) {
  const prev = offset > 0 ? Math.max(0, offset - LIMIT) : null;
  const next = offset + LIMIT < total ? offset + LIMIT : null;
  const link = (to, label, rel) =>
    to === null ? h("span", { class: "pager-off", "aria-disabled": "true" }, label) : h("a", { href: `${href}?offset=${to}`, class: "pager-link", rel }, label);
  return h(
    "nav",
    { class: "pager", "aria-label": "Chunk pages" },
    link(prev, "← Prev", "prev"),
    h("span", { class: "muted" }, total ? `${fmtNumber(offset + 1)}–${fmtNumber(Math.min(offset + LIMIT, total))} of ${fmtNumber(total)}` : "no chunks"),
    link(next, "Next →", "next"),
  );
}

export async function render(main, ctx) {
  const { params, query, signal } = ctx;
  const base = `/api/v1/datasets/${encodeURIComponent(params.id)}/files/${encodeURIComponent(params.fileId)}/chunks`;
  const split = query.has("split") && /^\d+$/.test(query.get("split")) ? Number(query.get("split")) : null;
  let offset = /^\d+$/.test(query.get("offset") || "") ? Number(query.get("offset")) : 0;
  if (split !== null && !query.has("offset")) offset = Math.floor(split / LIMIT) * LIMIT;

  const [dataset, page] = await Promise.all([
    api("GET", `/api/v1/datasets/${encodeURIComponent(params.id)}`, { signal }).catch(() => null),
    api("GET", `${base}?offset=${offset}&limit=${LIMIT}`, { signal }),
  ]);
  let chunks = page.chunks || [];
  if (split !== null && !chunks.some((c) => c.split_id === split)) {
    // split ids with gaps: ask for the chunk and its neighbours instead
    try {
      chunks = (await api("GET", `${base}?around=${split}&radius=2`, { signal })).chunks || chunks;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err;
    }
  }
  const href = chunkHref(params.id, params.fileId);
  const list = chunks.length ? h("div", { class: "chunk-list" }, chunks.map((c) => chunkCard(c, c.split_id === split, page.name))) : null;
  const rawToggle = list
    ? h("button", { type: "button", class: "small raw-toggle", "aria-pressed": "false", onclick: () => showRaw(rawToggle.getAttribute("aria-pressed") !== "true") }, "Raw text")
    : null;
  const showRaw = (on) => {
    rawToggle.setAttribute("aria-pressed", String(on));
    chunks.forEach((c, i) => list.children[i].lastElementChild.replaceWith(chunkBody(c, on)));
  };
  const datasetHref = `#/datasets/${encodeURIComponent(params.id)}`;
  append(main, [
    h(
      "nav",
      { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "#/datasets" }, "Datasets"),
      " / ",
      h("a", { href: datasetHref }, dataset ? dataset.name : "Dataset"),
      " / ",
    ),
    h("h1", { class: "file-title" }, page.name || "File"),
    h(
      "div",
      { class: "chunk-bar" },
      h("p", { class: "muted" }, `${fmtNumber(page.total)} ${page.total === 1 ? "chunk" : "chunks"}`, split !== null ? ` · showing chunk #${split}` : null),
      rawToggle,
    ),
    page.total > LIMIT || offset > 0 ? pager(href, offset, page.total) : null,
    list || h("p", { class: "muted" }, "This file has no chunks (yet)."),
    page.total > LIMIT ? pager(href, offset, page.total) : null,
  ]);

  const focused = main.querySelector(".chunk.focused");
  if (focused) requestAnimationFrame(() => focused.scrollIntoView({ block: "center" }));
}

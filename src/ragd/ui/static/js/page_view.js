// The page a passage came from: the page as the server draws it (GET /api/v1/datasets/{id}/files/
// {file}/pages/{n}; `?chunk=` marks the chunk's passage on it) in a modal dialog that fits a phone:
// the file's name and the page number above, zoom and scroll within, the previous and next page
// (the same route without ?chunk=: nothing is marked there), Escape or Close to leave, and the
// focus back on the "Page N" control that opened it.
//
// The image is fetched with the UI header (the session cookie counts only with it, and an
// <img src> cannot send it) and shown from an object URL (the CSP's img-src allows blob:), revoked
// as soon as it is replaced or the dialog closes.

import { ApiError, fetchBlob } from "./api.js";
import { h, replace } from "./dom.js";

const ZOOMS = [1, 1.5, 2, 3, 4]; // times "fit": 1 shows the whole page in the frame
let seq = 0;

/** The 1-based page number of a page route (a `page_image`), or null. */
export function pageNumber(url) {
  const m = /\/pages\/(\d+)(?:[?#]|$)/.exec(String(url || ""));
  return m ? Number(m[1]) : null;
}

/** The same route for page `n` of the file, without ?chunk=. */
function pageRoute(url, n) {
  return String(url).split(/[?#]/)[0].replace(/\/pages\/\d+$/, `/pages/${n}`);
}

/**
 * "Page N": a button that opens the page view of `url` (a hit's, chunk's or citation's
 * `page_image`), or null without one. `name` is the file's, shown above the page and in its alt text.
 */
export function pageButton(url, name) {
  const n = pageNumber(url);
  if (n === null) return null;
  const label = `Page ${n}`;
  const button = h("button", { type: "button", class: "small page-open", "aria-haspopup": "dialog", "aria-label": name ? `${label} of ${name}` : label }, label);
  button.addEventListener("click", () => openPageView(url, name, button));
  return button;
}

/** Open the page view of `url`; closing it gives the focus back to `opener`. */
export function openPageView(url, name, opener) {
  const view = new PageView(url, name, opener);
  view.open();
  return view;
}

class PageView {
  constructor(url, name, opener) {
    this.marked = url;
    this.markedPage = pageNumber(url);
    this.n = this.markedPage;
    this.name = name || "this file";
    this.opener = opener;
    this.zoom = 0; // index into ZOOMS
    this.pages = null; // the file's page count, when the server says (X-Page-Count)
    this.objectUrl = null;
    this.controller = null;
    this.img = null;
    this.build();
  }

  build() {
    const titleId = `page-view-${++seq}`;
    this.where = h("p", { class: "page-view-where", "aria-live": "polite" });
    this.prev = h("button", { type: "button", class: "small", onclick: () => this.load(this.n - 1) }, h("span", { "aria-hidden": "true" }, "‹ "), "Previous page");
    this.next = h("button", { type: "button", class: "small", onclick: () => this.load(this.n + 1) }, "Next page", h("span", { "aria-hidden": "true" }, " ›"));
    this.zoomOut = h("button", { type: "button", class: "small", "aria-label": "Zoom out", onclick: () => this.setZoom(this.zoom - 1) }, "−");
    this.zoomIn = h("button", { type: "button", class: "small", "aria-label": "Zoom in", onclick: () => this.setZoom(this.zoom + 1) }, "+");
    this.fit = h("button", { type: "button", class: "small", onclick: () => this.setZoom(0) }, "Fit");
    this.zoomText = h("output", { class: "page-view-zoom", "aria-live": "polite" });
    this.frame = h("div", { class: "page-frame", tabindex: "0", role: "region", "aria-label": "The page (scroll to move around it)" });
    this.dialog = h(
      "dialog",
      { class: "page-view", "aria-labelledby": titleId },
      h(
        "header",
        { class: "page-view-head" },
        h("div", { class: "page-view-title" }, h("h2", { id: titleId }, this.name), this.where),
        h("button", { type: "button", class: "page-view-close", onclick: () => this.dialog.close() }, "Close"),
      ),
      h(
        "div",
        { class: "page-view-tools" },
        h("div", { class: "page-view-nav", role: "group", "aria-label": "Pages" }, this.prev, this.next),
        h("div", { class: "page-view-zooms", role: "group", "aria-label": "Zoom" }, this.zoomOut, this.zoomText, this.zoomIn, this.fit),
      ),
      this.frame,
    );
    this.dialog.addEventListener("close", () => this.closed());
    this.dialog.addEventListener("keydown", (e) => this.key(e));
    this.onHash = () => this.dialog.close(); // a route change (sign-out, Back) leaves the page too
    this.resize = new ResizeObserver(() => this.layout());
  }

  open() {
    document.body.append(this.dialog);
    this.dialog.showModal();
    this.frame.focus({ preventScroll: true });
    window.addEventListener("hashchange", this.onHash);
    this.resize.observe(this.frame);
    this.load(this.markedPage);
  }

  closed() {
    if (this.controller) this.controller.abort();
    this.resize.disconnect();
    window.removeEventListener("hashchange", this.onHash);
    if (this.objectUrl) URL.revokeObjectURL(this.objectUrl);
    this.objectUrl = null;
    this.dialog.remove();
    if (this.opener && this.opener.isConnected) this.opener.focus();
  }

  key(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return; // the browser's own zoom stays the browser's
    if (e.key === "+" || e.key === "=") this.setZoom(this.zoom + 1);
    else if (e.key === "-") this.setZoom(this.zoom - 1);
    else return;
    e.preventDefault();
  }

  async load(n) {
    if (n < 1 || (this.pages !== null && n > this.pages)) return;
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.n = n;
    this.img = null; // the zoom waits for the new image (it keeps its level from page to page)
    const marked = n === this.markedPage;
    this.drawWhere();
    this.layout();
    this.frame.setAttribute("aria-busy", "true");
    replace(this.frame, h("p", { class: "page-view-state loading", role: "status" }, `Loading page ${n}…`));
    try {
      const { blob, headers } = await fetchBlob(marked ? this.marked : pageRoute(this.marked, n), { signal: controller.signal });
      const pages = Number.parseInt(headers.get("x-page-count") || "", 10);
      if (Number.isInteger(pages) && pages > 0) this.pages = pages;
      const url = URL.createObjectURL(blob);
      const img = h("img", { class: "page-image", alt: `Page ${n} of ${this.name}${marked ? ", the passage marked" : ""}`, "data-page": n });
      img.src = url; // our own object URL (h() lets only http(s) and relative URLs through)
      try {
        await img.decode();
      } finally {
        if (controller.signal.aborted) URL.revokeObjectURL(url);
      }
      if (controller.signal.aborted) return;
      if (this.objectUrl) URL.revokeObjectURL(this.objectUrl);
      this.objectUrl = url;
      this.img = img;
      replace(this.frame, img);
      this.layout();
    } catch (err) {
      if (controller.signal.aborted) return;
      this.img = null;
      const message = err instanceof ApiError ? err.describe() : `The page could not be shown (${err && err.message ? err.message : err}).`;
      replace(this.frame, h("p", { class: "page-view-state error", role: "alert" }, message));
    } finally {
      if (this.controller === controller) this.frame.removeAttribute("aria-busy");
    }
    this.drawWhere();
  }

  drawWhere() {
    const of = this.pages !== null && this.n <= this.pages ? ` of ${this.pages}` : "";
    this.where.textContent = `Page ${this.n}${of}${this.n === this.markedPage ? " · the passage is marked" : ""}`;
    this.prev.disabled = this.n <= 1;
    this.next.disabled = this.pages !== null && this.n >= this.pages;
  }

  setZoom(index) {
    const next = Math.max(0, Math.min(ZOOMS.length - 1, index));
    if (next === this.zoom || !this.img) {
      this.zoom = next;
      this.drawZoom();
      return;
    }
    // keep the point at the frame's centre where it is
    const f = this.frame;
    const cx = (f.scrollLeft + f.clientWidth / 2) / Math.max(1, f.scrollWidth);
    const cy = (f.scrollTop + f.clientHeight / 2) / Math.max(1, f.scrollHeight);
    this.zoom = next;
    this.layout();
    f.scrollLeft = cx * f.scrollWidth - f.clientWidth / 2;
    f.scrollTop = cy * f.scrollHeight - f.clientHeight / 2;
  }

  /** The image's size in CSS pixels: the whole page in the frame, times the zoom. */
  layout() {
    this.drawZoom();
    const img = this.img;
    if (!img || !img.naturalWidth) {
      this.zoomText.textContent = "";
      return;
    }
    const style = getComputedStyle(this.frame);
    const room = (size, a, b) => size - parseFloat(style[a]) - parseFloat(style[b]);
    const width = room(this.frame.clientWidth, "paddingLeft", "paddingRight");
    const height = room(this.frame.clientHeight, "paddingTop", "paddingBottom");
    const fit = Math.min(width / img.naturalWidth, height / img.naturalHeight, 1);
    const scale = Math.max(fit, 0.05) * ZOOMS[this.zoom];
    img.width = Math.max(1, Math.round(img.naturalWidth * scale));
    img.height = Math.max(1, Math.round(img.naturalHeight * scale));
    this.zoomText.textContent = `${Math.round(scale * 100)}%`; // of the image the server drew
  }

  drawZoom() {
    const none = !this.img;
    this.zoomOut.disabled = none || this.zoom === 0;
    this.zoomIn.disabled = none || this.zoom === ZOOMS.length - 1;
    this.fit.disabled = none || this.zoom === 0;
  }
}

// Building the page without HTML strings: every user-controlled string becomes a text node.
//
// The UI never parses an HTML string and never evaluates code from a string (the CSP enforces
// Trusted Types with no policy, so such a sink would throw; tests/ui/test_shell.py checks the
// sources for them too). Everything is built with h().

/**
 * h("button", {class: "primary", onclick: fn, "aria-label": "Delete"}, "Delete")
 * attrs: on* keys take functions (event listeners); class/className; dataset via data-*;
 * boolean true sets the attribute empty, false/null/undefined leaves it out; `value` and
 * `checked` are set as properties. Children: nodes, strings/numbers (text), arrays, null/false.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "class" || name === "className") {
      el.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : String(value);
    } else if (name === "value" || name === "checked" || name === "selected" || name === "indeterminate") {
      el[name] = value;
    } else if (name === "href" || name === "src" || name === "action") {
      el.setAttribute(name, safeUrl(String(value)));
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  clear(el);
  return append(el, children);
}

/** Only http(s), relative and fragment links: never javascript: or data: in an href. */
export function safeUrl(url) {
  const trimmed = url.trim();
  if (/^(https?:|\/|#|\.\/|\?)/i.test(trimmed) || !/^[a-z][a-z0-9+.-]*:/i.test(trimmed)) return trimmed;
  return "#";
}

/**
 * The regex of the words that start with one of `terms` (case-insensitive, global), or null.
 * A term matches at a word start and the match runs to the word's end ("clockwo" → "clockwork").
 */
export function termRegex(terms) {
  const words = [...new Set((terms || []).map((t) => t.toLowerCase()).filter((t) => t.length > 1))];
  if (!words.length) return null;
  const escaped = words.sort((a, b) => b.length - a.length).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`(?<![\\p{L}\\p{N}])(?:${escaped.join("|")})[\\p{L}\\p{N}]*`, "giu");
}

/** Text with every word that starts with one of `terms` wrapped in <mark> (case-insensitive). */
export function highlight(text, terms) {
  const re = termRegex(terms);
  if (!re) return [text];
  const out = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(h("mark", {}, m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

const STOP = new Set(
  "a an and are as at be by for from has have how in is it its of on or that the this to was were what when where which who why will with does do did can".split(" "),
);

/** The words of a query worth highlighting (no stop words; short stems match word starts). */
export function queryTerms(query) {
  return (query.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}_-]*/gu) || [])
    .filter((w) => !STOP.has(w) && w.length > 1)
    .map((w) => (w.length > 5 ? w.slice(0, Math.max(4, w.length - 2)) : w));
}

// ---- formatting -------------------------------------------------------------------------

export function fmtNumber(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 && i ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A unix time (seconds) as "2026-11-25 10:02" in the browser's zone; with `relative`, "3 min ago". */
export function fmtTime(ts, { relative = false } = {}) {
  if (!ts) return "–";
  const d = new Date(ts * 1000);
  if (relative) {
    const s = (Date.now() - d.getTime()) / 1000;
    if (s < 5) return "just now";
    if (s < 60) return `${Math.round(s)} s ago`;
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  }
  const pad = (x) => String(x).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 90) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

export function fmtScore(x) {
  return x === null || x === undefined ? "–" : Number(x).toFixed(3);
}

// ---- small widgets ----------------------------------------------------------------------

let fieldSeq = 0;

const LABELABLE = "input, select, textarea, button, meter, output, progress";

/**
 * A labelled form control: field("Name", h("input", {name: "name"}), "hint text"). `control` may
 * be a wrapper (a slider with its value, say): the label then names its first form control.
 */
export function field(label, control, hint) {
  const target = control.matches(LABELABLE) ? control : control.querySelector(LABELABLE) || control;
  const id = target.id || `f${++fieldSeq}`;
  target.id = id;
  const hintEl = hint ? h("small", { id: `${id}-hint`, class: "hint" }, hint) : null;
  if (hintEl) target.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl);
}

/** A status word as a coloured badge (indexed, failed, running…). */
export function badge(status, extra) {
  return h("span", { class: ["badge", `badge-${String(status).toLowerCase()}`] }, String(status), extra ? ` ${extra}` : null);
}

export function toast(message, kind = "info") {
  const box = document.getElementById("toasts");
  const el = h("div", { class: ["toast", `toast-${kind}`] }, message);
  box.append(el);
  setTimeout(() => el.remove(), kind === "error" ? 9000 : 4000);
}

/** A modal <dialog> asking to confirm; resolves true/false. */
export function confirmDialog(question, { confirm = "Delete", danger = true } = {}) {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-label": question },
      h("p", {}, question),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", value: "no", onclick: () => dialog.close("no") }, "Cancel"),
        h("button", { type: "button", class: danger ? "danger" : "primary", onclick: () => dialog.close("yes") }, confirm),
      ),
    );
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "yes");
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A sortable, filterable table: columns [{key, label, render?(row), sort?(row)}]. */
export function dataTable(columns, rows, { caption, empty = "Nothing here yet.", filter = "", rowAttrs } = {}) {
  let sortKey = null;
  let sortDir = 1;
  const tbody = h("tbody");
  const table = h("table", { class: "data" }, caption ? h("caption", {}, caption) : null);
  const headRow = h("tr");
  const draw = () => {
    const f = filter.toLowerCase();
    let shown = rows.filter((r) => !f || columns.some((c) => String(c.sort ? c.sort(r) : (r[c.key] ?? "")).toLowerCase().includes(f)));
    if (sortKey) {
      const col = columns.find((c) => c.key === sortKey);
      const value = (r) => (col.sort ? col.sort(r) : r[col.key]);
      shown = [...shown].sort((a, b) => {
        const x = value(a);
        const y = value(b);
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sortDir;
      });
    }
    clear(tbody);
    if (!shown.length) tbody.append(h("tr", {}, h("td", { colspan: columns.length, class: "empty" }, empty)));
    for (const row of shown) {
      tbody.append(
        h("tr", rowAttrs ? rowAttrs(row) : {}, columns.map((c) => h("td", { "data-label": c.label }, c.render ? c.render(row) : String(row[c.key] ?? "–")))),
      );
    }
  };
  for (const c of columns) {
    const th = h("th", { scope: "col" });
    if (c.sortable === false) {
      th.append(c.label);
    } else {
      const btn = h("button", { type: "button", class: "sort" }, c.label);
      btn.addEventListener("click", () => {
        sortDir = sortKey === c.key ? -sortDir : 1;
        sortKey = c.key;
        for (const other of headRow.querySelectorAll("th")) other.removeAttribute("aria-sort");
        th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
        draw();
      });
      th.append(btn);
    }
    headRow.append(th);
  }
  table.append(h("thead", {}, headRow), tbody);
  draw();
  table.setFilter = (text) => {
    filter = text;
    draw();
  };
  table.setRows = (next) => {
    rows = next;
    draw();
  };
  return table;
}

// A small Markdown renderer for chunk text, built with h(): no HTML string is ever parsed, so no
// sanitiser is needed (every character of the source ends up in a text node, raw HTML included).
//
// Blocks: ATX headings (shown two levels down: a chunk sits under the page's h1 and h2),
// paragraphs, bullet and numbered lists (nested by indentation), fenced code, pipe tables, block
// quotes, thematic breaks. Inline: `code`, **strong**, *em* and _em_, [text](url) as a link only
// for http(s) URLs (anything else stays text, with its URL). What it does not know stays text.

import { h } from "./dom.js";

const MAX_DEPTH = 6; // quotes and lists inside each other: deeper than this is shown as text

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^\s{0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** The block elements of `text` (an array of nodes). */
export function renderMarkdown(text) {
  return blocks(String(text || "").replace(/\r\n?/g, "\n").split("\n"), 0);
}

function startsBlock(line, next) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line) || isTableStart(line, next);
}

function isTableStart(line, next) {
  return line.includes("|") && next !== undefined && next.includes("-") && TABLE_RULE.test(next);
}

function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++; // the closing fence (or the end)
      out.push(h("pre", { class: "md-code" }, h("code", { "data-lang": fence[2] || null }, body.join("\n"))));
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      out.push(h(`h${Math.min(6, heading[1].length + 2)}`, { class: "md-heading" }, inline(heading[2], 0)));
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h("hr"));
      i++;
      continue;
    }
    if (isTableStart(line, lines[i + 1])) {
      const rows = [line];
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(lines[i++]);
      out.push(table(rows));
      continue;
    }
    if (depth < MAX_DEPTH && QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ""));
      out.push(h("blockquote", {}, blocks(body, depth + 1)));
      continue;
    }
    if (depth < MAX_DEPTH && ITEM.test(line)) {
      const [list, next] = listAt(lines, i, depth);
      out.push(list);
      i = next;
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && (!para.length || !startsBlock(lines[i], lines[i + 1]))) para.push(lines[i++].trim());
    out.push(h("p", {}, inline(para.join("\n"), 0)));
  }
  return out;
}

/** The list that starts at lines[start]: its items, each item's indented lines parsed as blocks. */
function listAt(lines, start, depth) {
  const first = ITEM.exec(lines[start]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  let i = start;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[3]];
    i++;
    while (i < lines.length) {
      const line = lines[i];
      const lead = line.length - line.trimStart().length;
      if (!line.trim()) {
        // a blank line ends the item unless the next line is indented under it
        const next = lines[i + 1];
        if (next === undefined || !next.trim() || next.length - next.trimStart().length <= indent) break;
        body.push("");
      } else if (lead <= indent && (ITEM.test(line) || startsBlock(line, lines[i + 1]))) {
        break;
      } else {
        body.push(lead > indent ? line.slice(Math.min(lead, indent + 2 + first[2].length)) : line.trim());
      }
      i++;
    }
    const parsed = blocks(body, depth + 1);
    // a tight item (one paragraph) holds its text directly
    const content = parsed.length === 1 && parsed[0].tagName === "P" ? [...parsed[0].childNodes] : parsed;
    items.push(h("li", {}, content));
  }
  const attrs = ordered && Number.parseInt(first[2], 10) !== 1 ? { start: Number.parseInt(first[2], 10) } : {};
  return [h(ordered ? "ol" : "ul", attrs, items), i];
}

function cells(row) {
  const trimmed = row.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "");
  return trimmed.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(rows) {
  const [head, ...body] = rows.map(cells);
  const width = head.length;
  const pad = (r) => Array.from({ length: width }, (_, k) => r[k] ?? "");
  return h(
    "div",
    { class: "md-table" },
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, inline(c, 0))))),
      h("tbody", {}, body.map((r) => h("tr", {}, pad(r).map((c) => h("td", {}, inline(c, 0)))))),
    ),
  );
}

// code span | link | **strong** | __strong__ | *em* | _em_ (underscores only between non-words)
const INLINE = new RegExp(
  [
    "(`+)([^`]|[^`][\\s\\S]*?[^`])\\1(?!`)",
    "\\[([^\\]\\n]+)\\]\\(\\s*<?([^)\\s>]+)>?(?:\\s+\"[^\"\\n]*\")?\\s*\\)",
    "\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*",
    "(?<![\\p{L}\\p{N}_])__(?=\\S)([\\s\\S]*?\\S)__(?![\\p{L}\\p{N}_])",
    "\\*(?=[^\\s*])([\\s\\S]*?[^\\s*])\\*",
    "(?<![\\p{L}\\p{N}_])_(?=[^\\s_])([\\s\\S]*?[^\\s_])_(?![\\p{L}\\p{N}_])",
  ].join("|"),
  "gu",
);

/** Inline Markdown of `text` as nodes and strings (for h()). */
export function inline(text, depth) {
  if (depth >= MAX_DEPTH) return [text];
  const out = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1] !== undefined) out.push(h("code", {}, m[2].length > 2 && m[2].startsWith(" ") && m[2].endsWith(" ") ? m[2].slice(1, -1) : m[2]));
    else if (m[3] !== undefined) out.push(link(m[3], m[4], depth));
    else if (m[5] !== undefined || m[6] !== undefined) out.push(h("strong", {}, inline(m[5] ?? m[6], depth + 1)));
    else out.push(h("em", {}, inline(m[7] ?? m[8], depth + 1)));
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function link(label, url, depth) {
  if (!/^https?:\/\/[^\s]+$/i.test(url)) return [...inline(label, depth + 1), ` (${url})`];
  return h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank", class: "md-link" }, inline(label, depth + 1));
}

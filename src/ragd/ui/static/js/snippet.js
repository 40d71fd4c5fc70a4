// The part of a chunk a search hit on: the window of at most `size` characters that holds the most
// distinct query terms (then the most matches), started at a sentence or word boundary. A pure
// function of the text and the terms, so the sandbox shows the matched passage, not the chunk's
// first lines.

import { termRegex } from "./dom.js";

export const SNIPPET_CHARS = 420;

/** {start, end} of the best window of `text` for `terms`: the whole text when it is short. */
export function matchWindow(text, terms, size = SNIPPET_CHARS) {
  if (text.length <= size) return { start: 0, end: text.length };
  const re = termRegex(terms);
  const hits = re ? [...text.matchAll(re)] : [];
  if (!hits.length) return { start: 0, end: cutEnd(text, size, 0) };
  const stems = [...new Set(terms.map((t) => t.toLowerCase()))].sort((a, b) => b.length - a.length);
  const found = hits.map((m) => {
    const word = m[0].toLowerCase();
    return { at: m.index, end: m.index + m[0].length, term: stems.find((t) => word.startsWith(t)) };
  });
  let best = null;
  for (let i = 0; i < found.length; i++) {
    const seen = new Set();
    let last = i;
    for (let j = i; j < found.length && found[j].end - found[i].at <= size; j++) {
      seen.add(found[j].term);
      last = j;
    }
    const score = seen.size * 1000 + (last - i + 1);
    if (!best || score > best.score) best = { score, from: found[i].at, to: found[last].end };
  }
  // a third of the slack before the matched span, two thirds after; then a clean start
  const slack = size - (best.to - best.from);
  const rough = Math.max(0, Math.min(best.from - Math.floor(slack / 3), text.length - size));
  const start = snapStart(text, rough, best.from);
  return { start, end: cutEnd(text, start + size, best.to) };
}

/** The first sentence or line start in [from, limit], else the first word start, else `from`. */
function snapStart(text, from, limit) {
  if (from === 0) return 0;
  for (let p = from; p <= limit; p++) {
    if (text[p - 1] === "\n" || (text[p - 1] === " " && /[.!?:;]/.test(text[p - 2] || ""))) return p;
  }
  for (let p = from; p <= limit; p++) if (/\s/.test(text[p - 1])) return p;
  return from;
}

/** `end` moved back to a word end (not before `min`); the text's length when it reaches it. */
function cutEnd(text, end, min) {
  if (end >= text.length) return text.length;
  for (let p = end; p > min; p--) if (/\s/.test(text[p])) return p;
  return end;
}

"""Pure: where a page's words are drawn, from the page's text and the glyphs a layout engine drew.

An extractor's page text is not the layout engine's character stream: kreuzberg's PDF page text is
cleaned (:func:`ragd.extract.paged_text.clean_page_text` drops control characters and garbled
lines, turns ``\\x02`` into ``-``, collapses dot leaders into one ``…``, CRLF into LF), and OCR text
is Tesseract's words joined by spaces and blank lines.  :func:`align` pairs the two sequences of
non-space characters in order: equal characters match; at a difference it skips, within a window,
to the nearest place where the next few characters of the text occur among the glyphs again
(dropped glyphs), skipping up to :data:`MAX_TEXT_SKIP` characters of the text when they are not
drawn (a leader's ``…``).  It is linear in practice (each skip is one ``str.find`` over a bounded
window) and gives up on a page whose text and glyphs stop agreeing altogether.

:func:`word_boxes` turns the pairing into :class:`ragd.types.TextBox` records: one per word (a run
of non-space characters of the text), in document offsets, split where the word's glyphs jump to
another line.  Glyph boxes are fractions of the page, top-left origin.  :func:`ocr_boxes` does the
same for an OCRed page from the engine's words and their boxes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragd.types import TextBox

#: a character's box (x0, y0, x1, y1) in fractions of the page, top-left origin
Box = tuple[float, float, float, float]
#: the box of the layout engine's character ``k`` (None: it has none)
BoxOf = Callable[[int], Box | None]

#: how far (glyphs) a resynchronisation looks ahead for the text's next characters
WINDOW = 4096
#: characters of the text that must agree for a resynchronisation to count
GRAM = 4
#: characters of the text skipped at most at one difference (drawn nowhere: a leader's ``…``)
MAX_TEXT_SKIP = 3
#: consecutive characters of the text without a glyph after which the page is given up
MAX_UNMATCHED_RUN = 2000
_BLOCK = 32
#: what a layout engine draws for a character that the page text writes otherwise
_SAME = str.maketrans({"\x02": "-", "\u00ad": "-", "\r": " ", "\n": " "})


def align(text: str, glyphs: str, *, window: int = WINDOW, gram: int = GRAM) -> list[int]:
    """For each character of ``text``, the index of the character of ``glyphs`` it is, or -1.

    Both are sequences of non-space characters in reading order."""
    out = [-1] * len(text)
    i = j = 0
    n, m = len(text), len(glyphs)
    unmatched = 0
    while i < n and j < m:
        if text[i : i + _BLOCK] == glyphs[j : j + _BLOCK] and i + _BLOCK <= n:  # most of a page agrees
            out[i : i + _BLOCK] = range(j, j + _BLOCK)
            i += _BLOCK
            j += _BLOCK
            unmatched = 0
            continue
        if text[i] == glyphs[j]:
            out[i] = j
            i += 1
            j += 1
            unmatched = 0
            continue
        best: tuple[int, int, int] | None = None  # (cost, text skip, glyph position)
        for skip in range(MAX_TEXT_SKIP + 1):
            if i + skip >= n:
                break
            key = text[i + skip : i + skip + gram]
            found = glyphs.find(key, j, min(m, j + window + len(key)))
            if found >= 0 and (best is None or found - j + skip < best[0]):
                best = (found - j + skip, skip, found)
        if best is None:
            i += 1  # this character is drawn nowhere near: no box for it
            unmatched += 1
            if unmatched > MAX_UNMATCHED_RUN:
                break
            continue
        i += best[1]
        j = best[2]
    return out


def word_boxes(page: int, offset: int, text: str, chars: str, box_of: BoxOf) -> list[TextBox]:
    """One box per word of ``text`` (which starts at document offset ``offset``) on ``page``.

    ``chars`` is the page's character stream as the layout engine holds it, ``box_of(k)`` the box
    of its character ``k`` (None when it has none); boxes are asked for the first and last
    character of each word only, unless those two are not on one line (then for every character,
    and the word is split where its characters change lines).  Words with no glyph get no box."""
    positions = [k for k, ch in enumerate(text) if not ch.isspace()]
    drawn = [k for k, ch in enumerate(chars) if not ch.isspace()]
    pairs = align(
        "".join([text[k] for k in positions]).translate(_SAME),
        "".join([chars[k] for k in drawn]).translate(_SAME),
    )
    # a word: positions[a:b] (consecutive offsets), with glyphs
    glyph = [drawn[j] if j >= 0 else -1 for j in pairs]
    boxes: list[TextBox] = []
    a = 0
    n = len(positions)
    for b in range(1, n + 1):
        if b < n and positions[b] == positions[b - 1] + 1:
            continue
        found = [i for i in range(a, b) if glyph[i] >= 0]
        if found:
            boxes.extend(_word(page, offset, [(positions[i], glyph[i]) for i in found], box_of))
        a = b
    return boxes


def _word(page: int, offset: int, word: list[tuple[int, int]], box_of: BoxOf) -> list[TextBox]:
    """The box of one word from its first and last glyph, or one box per line of its glyphs."""
    first, last = box_of(word[0][1]), box_of(word[-1][1])
    close = word[-1][1] - word[0][1] < 2 * len(word) + 2  # its glyphs are drawn together
    if first is not None and last is not None and close and last[2] >= first[0] and _same_line(first, last):
        top = first[1] if first[1] < last[1] else last[1]
        bottom = first[3] if first[3] > last[3] else last[3]
        run = (first[0], top, last[2], bottom)
        return [_box(page, offset, word[0][0], word[-1][0] + 1, run)]
    boxes: list[TextBox] = []
    run_box: Box | None = None
    run_start = run_end = 0
    for k, index in word:
        g = box_of(index)
        if g is None:
            continue
        if run_box is not None and _same_line(run_box, g):
            run_box = (
                min(run_box[0], g[0]),
                min(run_box[1], g[1]),
                max(run_box[2], g[2]),
                max(run_box[3], g[3]),
            )
            run_end = k + 1
            continue
        if run_box is not None:
            boxes.append(_box(page, offset, run_start, run_end, run_box))
        run_box, run_start, run_end = g, k, k + 1
    if run_box is not None:
        boxes.append(_box(page, offset, run_start, run_end, run_box))
    return boxes


def _same_line(a: Box, b: Box) -> bool:
    top, bottom = max(a[1], b[1]), min(a[3], b[3])
    return bottom - top >= min(a[3] - a[1], b[3] - b[1]) / 2


def _box(page: int, offset: int, start: int, end: int, run: Box) -> TextBox:
    x0, y0, x1, y1 = run
    return TextBox(
        page,
        offset + start,
        offset + end,
        0.0 if x0 < 0.0 else x0,
        0.0 if y0 < 0.0 else y0,
        1.0 if x1 > 1.0 else x1,
        1.0 if y1 > 1.0 else y1,
    )


@dataclass(frozen=True, slots=True)
class OcrWord:
    """A word an OCR engine read, and where (fractions of the page, top-left origin)."""

    text: str
    box: Box


def ocr_boxes(page: int, offset: int, text: str, words: Sequence[OcrWord]) -> list[TextBox]:
    """The word boxes of an OCRed page's ``text`` (at document offset ``offset``) from the words
    the OCR engine read, in its reading order (the text is made of them)."""
    chars: list[str] = []
    owner: list[int] = []  # the word each character of ``chars`` belongs to (-1: a separator)
    for index, word in enumerate(words):
        chars.append(word.text)
        owner.extend([index] * len(word.text))
        chars.append(" ")
        owner.append(-1)

    def box_of(k: int) -> Box | None:
        return words[owner[k]].box if owner[k] >= 0 else None

    return word_boxes(page, offset, text, "".join(chars), box_of)

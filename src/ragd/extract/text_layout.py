"""Pure: where a page's words are drawn, from the page's text and the glyphs a layout engine drew.

An extractor's page text is not the layout engine's character stream: kreuzberg's PDF page text is
cleaned (:func:`ragd.extract.paged_text.clean_page_text` drops control characters and garbled
lines, turns ``\\x02`` into ``-``, collapses dot leaders into one ``…``, CRLF into LF), and OCR text
is Tesseract's words joined by spaces and blank lines.  :func:`align` pairs the two sequences of
non-space characters line by line: each line of the text is found among the glyphs by its first
characters (where the previous one ended, else anywhere: a turned page's lines may come in another
order), then paired in order: equal characters match; at a difference both skip, within a window,
to the nearest place where the next few characters of the text are drawn again (dropped glyphs),
skipping up to :data:`MAX_TEXT_SKIP` characters of the text when they are not drawn (a leader's
``…``).  It is linear in practice (each skip is one ``str.find`` over a bounded window) and gives
up on a line whose text and glyphs stop agreeing altogether.

:func:`word_boxes` turns the pairing into :class:`ragd.types.TextBox` records: one per word (a run
of non-space characters of the text), in document offsets, split where the word's glyphs jump to
another line.  Glyph boxes are fractions of the page, top-left origin.  :func:`ocr_boxes` does the
same for an OCRed page from the engine's words and their boxes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragd.types import TextBox

#: a character's box (x0, y0, x1, y1) in fractions of the page, top-left origin
Box = tuple[float, float, float, float]
#: the box of the layout engine's character ``k`` (None: it has none)
BoxOf = Callable[[int], Box | None]
#: the page (0-based) of the layout engine's character ``k``
PageOf = Callable[[int], int]

#: word boxes a document keeps at most (about 220 bytes each; a 300-page 10-K has 200,000): pages
#: past it get none, so a 20-million-character document costs ~110 MB of boxes, not a gigabyte
MAX_DOCUMENT_BOXES = 500_000
#: how far (glyphs) a resynchronisation looks ahead for the text's next characters
WINDOW = 4096
#: characters of the text that must agree for a resynchronisation to count
GRAM = 4
#: characters of the text skipped at most at one difference (drawn nowhere: a leader's ``…``)
MAX_TEXT_SKIP = 3
#: lines of a page looked up among all its glyphs (drawn out of order), at most
MAX_REORDERED = 500
#: consecutive characters of a line without a glyph after which the line is given up
MAX_UNMATCHED_RUN = 2000
_ANCHOR = 8  # characters a line is looked up by
_SLACK = 64  # glyphs a line's pairing may cover beyond its own length (dropped glyph garbage)
_BLOCK = 32
#: what a layout engine draws for a character that the page text writes otherwise
_SAME = str.maketrans({"\x02": "-", "\u00ad": "-", "\r": " ", "\n": " "})


def align(text: str, glyphs: str, lines: Sequence[int] = (0,), *, window: int = WINDOW) -> list[int]:
    """For each character of ``text``, the index of the character of ``glyphs`` it is, or -1.

    Both are sequences of non-space characters in reading order; ``lines`` are the indices of
    ``text`` where its lines start.  Each line is found among the glyphs by its first word (up to
    :data:`_ANCHOR` characters; Markdown's marks before it are not drawn), where the previous line
    ended (else anywhere: a turned page's lines come in another order, or a table's), then paired
    character by character (:func:`_in_order`)."""
    out = [-1] * len(text)
    cursor = reordered = 0
    bounds = [*lines, len(text)]
    for line_start, b in itertools.pairwise(bounds):
        # Markdown's marks before a line's first word ("# ", "| ", "- ") are not drawn
        a = next((i for i in range(line_start, b) if text[i].isalnum()), line_start)
        if b <= a:
            continue
        key = text[a : a + _ANCHOR]
        key = key[: next((k for k, ch in enumerate(key) if not ch.isalnum()), len(key))] or key
        at = glyphs.find(key, cursor, cursor + window + len(key))
        if at < 0 and reordered < MAX_REORDERED:
            reordered += 1
            at = glyphs.find(key)
        at = cursor if at < 0 else at
        pairs = _in_order(text[a:b], glyphs, at, min(len(glyphs), at + 2 * (b - a) + _SLACK), window)
        out[a:b] = pairs
        cursor = max((j + 1 for j in pairs if j >= 0), default=cursor)
    _grown(text, glyphs, out)
    return out


def _in_order(text: str, glyphs: str, j: int, m: int, window: int) -> list[int]:
    """``text`` paired in order with ``glyphs[j:m]``: equal characters pair; at a difference both
    skip to the nearest place where :data:`GRAM` characters of the text are drawn again."""
    out = [-1] * len(text)
    i, n = 0, len(text)
    unmatched = 0
    while i < n and j < m:
        if i + _BLOCK <= n and text[i : i + _BLOCK] == glyphs[j : j + _BLOCK]:  # most of a page agrees
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
        best = _resync(text, glyphs, i, j, min(m, j + window))
        if best is None:
            i += 1  # this character is drawn nowhere near: no box for it
            unmatched += 1
            if unmatched > MAX_UNMATCHED_RUN:
                break
            continue
        i += best[0]
        j = best[1]
    return out


def _grown(text: str, glyphs: str, out: list[int]) -> None:
    """Pair the unpaired characters next to a paired one with the glyph next to its glyph when they
    are the same character (a line's last letters after a difference)."""
    for i in range(len(text) - 2, -1, -1):
        if out[i] < 0 and out[i + 1] > 0 and glyphs[out[i + 1] - 1] == text[i]:
            out[i] = out[i + 1] - 1
    for i in range(1, len(text)):
        if out[i] < 0 and 0 <= out[i - 1] < len(glyphs) - 1 and glyphs[out[i - 1] + 1] == text[i]:
            out[i] = out[i - 1] + 1


def _resync(text: str, glyphs: str, i: int, j: int, end: int) -> tuple[int, int] | None:
    """``(text skip, glyph position)`` of the nearest place before ``end`` where :data:`GRAM`
    characters of the text from ``i`` (after skipping up to :data:`MAX_TEXT_SKIP`) are drawn."""
    best: tuple[int, int, int] | None = None  # (cost, text skip, glyph position)
    for skip in range(min(MAX_TEXT_SKIP, len(text) - i - 1) + 1):
        key = text[i + skip : i + skip + GRAM]
        found = glyphs.find(key, j, end)
        if found >= 0 and (best is None or found - j + skip < best[0]):
            best = (found - j + skip, skip, found)
    return (best[1], best[2]) if best is not None else None


def word_boxes(page: int | PageOf, offset: int, text: str, chars: str, box_of: BoxOf) -> list[TextBox]:
    """One box per word of ``text`` (which starts at document offset ``offset``) on ``page``.

    ``chars`` is the page's character stream as the layout engine holds it, ``box_of(k)`` the box
    of its character ``k`` (None when it has none); boxes are asked for the first and last
    character of each word only, unless those two are not on one line (then for every character,
    and the word is split where its characters change lines).  Words with no glyph get no box.
    ``page`` may also say the page of each character (``chars`` then holds several pages)."""
    positions = [k for k, ch in enumerate(text) if not ch.isspace()]
    drawn = [k for k, ch in enumerate(chars) if not ch.isspace()]
    lines = [i for i, k in enumerate(positions) if i == 0 or "\n" in text[positions[i - 1] : k]]
    pairs = align(
        "".join([text[k] for k in positions]).translate(_SAME),
        "".join([chars[k] for k in drawn]).translate(_SAME),
        lines,
    )
    # a word: positions[a:b] (consecutive offsets); its drawn characters with their glyphs
    glyph = [drawn[j] if j >= 0 else -1 for j in pairs]
    words: list[list[tuple[int, int]]] = []
    a = 0
    n = len(positions)
    for b in range(1, n + 1):
        if b < n and positions[b] == positions[b - 1] + 1:
            continue
        word = [(positions[i], glyph[i]) for i in range(a, b) if glyph[i] >= 0]
        if word:
            words.append(word)
        a = b
    direction = _Lines(_runs_across(words, box_of))
    page_of: PageOf = (lambda _k: page) if isinstance(page, int) else page
    boxes: list[TextBox] = []
    for word in words:
        boxes.extend(_word(page_of, offset, word, box_of, direction))
    return boxes


class _Lines:
    """Whether two boxes are on one line of a page whose lines run across (left to right) or down
    (a turned page, where a line's glyphs stack): they overlap by half the other way."""

    def __init__(self, across: bool) -> None:
        self.across = across

    def same(self, a: Box, b: Box) -> bool:
        if self.across:
            return min(a[3], b[3]) - max(a[1], b[1]) >= min(a[3] - a[1], b[3] - b[1]) / 2
        return min(a[2], b[2]) - max(a[0], b[0]) >= min(a[2] - a[0], b[2] - b[0]) / 2

    def onwards(self, first: Box, last: Box) -> bool:
        """``last`` comes after ``first`` along the line."""
        return last[2] >= first[0] if self.across else last[3] >= first[1]


def _runs_across(words: list[list[tuple[int, int]]], box_of: BoxOf, sample: int = 24) -> bool:
    """Whether the page's lines run across: most of a sample of words step rightwards from their
    first glyph to their second rather than downwards."""
    votes = 0
    for word in [w for w in words if len(w) > 1][:sample]:
        a, b = box_of(word[0][1]), box_of(word[1][1])
        if a is not None and b is not None:
            votes += 1 if abs(b[0] - a[0]) >= abs(b[1] - a[1]) else -1
    return votes >= 0


def _word(
    page_of: PageOf, offset: int, word: list[tuple[int, int]], box_of: BoxOf, lines: _Lines
) -> list[TextBox]:
    """The box of one word from its first and last glyph, or one box per line of its glyphs."""
    first, last = box_of(word[0][1]), box_of(word[-1][1])
    close = word[-1][1] - word[0][1] < 2 * len(word) + 2  # its glyphs are drawn together
    page = page_of(word[0][1])
    if (
        first is not None
        and last is not None
        and close
        and lines.onwards(first, last)
        and lines.same(first, last)
        and page_of(word[-1][1]) == page
    ):
        run = (min(first[0], last[0]), min(first[1], last[1]), max(first[2], last[2]), max(first[3], last[3]))
        return [_box(page, offset, word[0][0], word[-1][0] + 1, run)]
    boxes: list[TextBox] = []
    run_box: Box | None = None
    run_start = run_end = 0
    for k, index in word:
        g = box_of(index)
        if g is None:
            continue
        if run_box is not None and page_of(index) == page and lines.same(run_box, g):
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
        run_box, run_start, run_end, page = g, k, k + 1, page_of(index)
    if run_box is not None:
        boxes.append(_box(page, offset, run_start, run_end, run_box))
    return boxes


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

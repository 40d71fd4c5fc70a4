"""Bytes of a text file to ``str``: Unicode first, then the legacy encoding that reads most plausibly.

Order: a byte-order mark (UTF-8/16/32), UTF-16 without a BOM (recognised by its NUL
bytes), strict UTF-8, then the legacy code pages ``cp932`` (Shift-JIS), ``gb18030``,
``cp1252`` and ``cp1251``.  Each legacy candidate that decodes a sample strictly
(``cp1252`` always does: its few undefined bytes become U+FFFD) is scored on how
implausible its text looks (replacement, control and private-use characters,
half-width katakana, words mixing Latin with another script, "words" made only of
accented Latin letters); the least implausible wins, ties going to the order above.

Limits: EUC-JP, EUC-KR and Big5 are not told apart from GB18030 (that takes
language statistics); such files decode as the nearest candidate.

Text that is valid UTF-8 but was double-encoded on its way here ("mojibake":
``â€“`` for ``–``) is repaired sequence by sequence: only runs that re-encode to
one valid UTF-8 character are replaced.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
LEGACY_ENCODINGS = ("cp932", "gb18030", "cp1252", "cp1251")
_LENIENT = "cp1252"
_SAMPLE_BYTES = 64 * 1024
_WORD = re.compile(r"[^\W\d_]+")
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")


@dataclass(frozen=True, slots=True)
class DecodedText:
    text: str
    encoding: str


def decode_text(data: bytes) -> DecodedText:
    """Decode a text file's bytes (see the module docstring for the order)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return DecodedText(repair_mojibake(data.decode(encoding, errors="replace")), encoding)
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        return utf16
    try:
        return DecodedText(repair_mojibake(data.decode("utf-8")), "utf-8")
    except UnicodeDecodeError:
        pass
    for encoding in _rank_legacy(data):
        try:
            return DecodedText(data.decode(encoding, errors=_errors(encoding)), encoding)
        except UnicodeDecodeError:
            continue
    return DecodedText(data.decode(_LENIENT, errors="replace"), _LENIENT)


def implausibility(text: str) -> int:
    """How many signs of a wrong decoding ``text`` shows (0 for clean text)."""
    score = sum(1 for ch in text if _suspicious(ch))
    for word in _WORD.findall(text):
        latin = [_is_latin(ch) for ch in word]
        if any(latin) and not all(latin):
            score += 1  # Latin letters and another script in one word
        elif len(word) >= 3 and not any(ch.isascii() for ch in word) and all(latin):
            score += 1  # only accented Latin letters: Cyrillic or Greek read as cp1252
    return score


def _rank_legacy(data: bytes) -> list[str]:
    """Legacy encodings that decode a sample of ``data``, most plausible first."""
    sample = data[:_SAMPLE_BYTES]
    final = len(sample) == len(data)
    scored: list[tuple[int, int, str]] = []
    for order, encoding in enumerate(LEGACY_ENCODINGS):
        decoder = codecs.getincrementaldecoder(encoding)(errors=_errors(encoding))
        try:
            text = decoder.decode(sample, final=final)
        except UnicodeDecodeError:
            continue
        scored.append((implausibility(text), order, encoding))
    return [encoding for _, _, encoding in sorted(scored)]


def _errors(encoding: str) -> str:
    return "replace" if encoding == _LENIENT else "strict"


def _utf16_without_bom(data: bytes) -> DecodedText | None:
    sample = data[:4096]
    if len(sample) < 4 or len(sample) % 2:
        return None
    even_nuls = sample[0::2].count(0)
    odd_nuls = sample[1::2].count(0)
    half = len(sample) // 2
    encoding = None
    if odd_nuls > half * 0.3 and even_nuls < half * 0.05:
        encoding = "utf-16-le"
    elif even_nuls > half * 0.3 and odd_nuls < half * 0.05:
        encoding = "utf-16-be"
    if encoding is None:
        return None
    try:
        return DecodedText(data.decode(encoding), encoding)
    except UnicodeDecodeError:
        return None


def _suspicious(ch: str) -> bool:
    if ch.isascii():
        return ch < " " and ch not in _ALLOWED_CONTROLS
    if "\uff61" <= ch <= "\uff9f" or ch == "\ufffd":
        return True
    return unicodedata.category(ch) in {"Cc", "Co", "Cn", "Cs"}


def _is_latin(ch: str) -> bool:
    return ch < "\u0250" or "\u1e00" <= ch <= "\u1eff"


def _byte_of(ch: str) -> int:
    """The single byte a mis-decoded character came from (cp1252 first, then Latin-1)."""
    try:
        return ch.encode("cp1252")[0]
    except UnicodeEncodeError:
        return ch.encode("latin-1")[0]


def _continuation_chars() -> str:
    chars = {bytes([b]).decode("latin-1") for b in range(0x80, 0xC0)}
    for b in range(0x80, 0xC0):
        try:
            chars.add(bytes([b]).decode("cp1252"))
        except UnicodeDecodeError:
            continue
    return re.escape("".join(sorted(chars)))


_CONT = _continuation_chars()
_MOJIBAKE = re.compile(
    f"[\u00c2-\u00df][{_CONT}]|[\u00e0-\u00ef][{_CONT}]{{2}}|[\u00f0-\u00f4][{_CONT}]{{3}}"
)


def repair_mojibake(text: str) -> str:
    """Undo UTF-8 that was decoded as cp1252/Latin-1 and re-encoded, one sequence at a time."""

    def fix(match: re.Match[str]) -> str:
        try:
            return bytes(_byte_of(ch) for ch in match.group()).decode("utf-8")
        except UnicodeDecodeError:
            return match.group()

    return _MOJIBAKE.sub(fix, text)

"""JsonTextCheck, fed in arbitrary pieces, agrees with parsing the whole body and looking at its strings."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragd.api.text_check import JsonTextCheck
from ragd.errors import InvalidText

LONE = re.compile(r"[\ud800-\udfff\x00]")
#: characters that make escapes interesting: surrogates of both halves, NUL, backslashes, quotes
CHARS = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\x00", "\\", '"', "u", "a", "é", "😀"])


def reference(body: bytes) -> bool:
    """True when the body is fine: every string of the parsed JSON encodes as UTF-8 without NUL."""

    def fine(value: Any) -> bool:
        if isinstance(value, str):
            return not LONE.search(value)
        if isinstance(value, list):
            return all(fine(v) for v in value)
        if isinstance(value, dict):
            return all(fine(k) and fine(v) for k, v in value.items())
        return True

    return fine(json.loads(body))


def verdict(body: bytes, cuts: list[int]) -> bool:
    check = JsonTextCheck()
    edges = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    try:
        for start, end in itertools.pairwise(edges):
            check.feed(body[start:end])
        check.feed(b"", final=True)
    except InvalidText:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(
    texts=st.lists(st.text(CHARS, max_size=12), min_size=1, max_size=4),
    ascii_only=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
)
def test_pieces_agree_with_the_whole(texts: list[str], ascii_only: bool, cuts: list[int]) -> None:
    body = json.dumps({"q": texts}, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    if not ascii_only and any(LONE.search(t) and not set(LONE.findall(t)) <= {"\x00"} for t in texts):
        # raw surrogate bytes are no UTF-8: refused whatever json.loads would make of them
        assert verdict(body, cuts) is False
        return
    assert verdict(body, cuts) is reference(body)


@pytest.mark.parametrize(
    ("body", "fine"),
    [
        (rb'{"q": "\ud83d\ude00"}', True),  # a pair
        (rb'{"q": "\\ud800"}', True),  # an escaped backslash, then the text ud800
        (rb'{"q": "\\\ud800"}', False),  # an escaped backslash, then a lone surrogate
        (rb'{"q": "\ud800\u0041"}', False),
        (rb'{"q": "\uDC00"}', False),
        (rb'{"q": "\u0000"}', False),
        (b'{"q": "\xed\xa0\x80"}', False),  # a surrogate's bytes: no UTF-8
        (b'{"q": "caf\xc3\xa9"}', True),
    ],
)
def test_escapes_one_byte_at_a_time(body: bytes, fine: bool) -> None:
    assert verdict(body, list(range(len(body)))) is fine
    assert verdict(body, []) is fine

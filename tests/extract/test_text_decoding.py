"""Decoding text files: Unicode, legacy code pages, and double-encoded UTF-8."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.extract.text_decoding import decode_text, implausibility, repair_mojibake

WESTERN = "Café naïve résumé — “quoted” €5 décor über Straße"
JAPANESE = "これは日本語のテキストです。カタカナも含みます。"
KANJI_CSV = "名前,年齢,住所\r\n佐藤太郎,30,東京\r\n三木英子,25,大阪\r\n髙橋淳,35,名古屋\r\n"
RUSSIAN = "Привет, как дела? Это тест кодировки."
CHINESE = "这是一个中文文本的例子。我们测试编码。"


@pytest.mark.parametrize(
    ("data", "text", "encoding"),
    [
        pytest.param(WESTERN.encode(), WESTERN, "utf-8", id="utf-8"),
        pytest.param(b"\xef\xbb\xbf" + WESTERN.encode(), WESTERN, "utf-8-sig", id="utf-8 BOM"),
        pytest.param(WESTERN.encode("utf-16"), WESTERN, "utf-16", id="utf-16 BOM"),
        pytest.param(
            "Hello wörld, plain".encode("utf-16-le"), "Hello wörld, plain", "utf-16-le", id="utf-16le"
        ),
        pytest.param(
            "Hello wörld, plain".encode("utf-16-be"), "Hello wörld, plain", "utf-16-be", id="utf-16be"
        ),
        pytest.param(WESTERN.encode("cp1252"), WESTERN, "cp1252", id="cp1252"),
        pytest.param("Café".encode("cp1252"), "Café", "cp1252", id="cp1252 short"),
        pytest.param(
            "“Hi” – he said… ‘ok’ €".encode("cp1252"), "“Hi” – he said… ‘ok’ €", "cp1252", id="cp1252 quotes"
        ),
        pytest.param(KANJI_CSV.encode("cp932"), KANJI_CSV, "cp932", id="shift-jis kanji only"),
        pytest.param(JAPANESE.encode("shift_jis"), JAPANESE, "cp932", id="shift-jis kana"),
        pytest.param(RUSSIAN.encode("cp1251"), RUSSIAN, "cp1251", id="cp1251"),
        pytest.param(CHINESE.encode("gb18030"), CHINESE, "gb18030", id="gb18030"),
    ],
)
def test_decodes_each_encoding_exactly(data: bytes, text: str, encoding: str) -> None:
    decoded = decode_text(data)
    assert decoded.text == text
    assert decoded.encoding == encoding


def test_undefined_cp1252_bytes_become_replacement_characters_not_another_script() -> None:
    decoded = decode_text(b"caf\xe9 \x81 \x93quoted\x94")
    assert decoded.text == "café \ufffd “quoted”"


def test_mojibake_is_repaired_sequence_by_sequence() -> None:
    broken = "naÃ¯ve cafÃ© â€“ 1986â\x80\x931990 Â£275"
    assert repair_mojibake(broken) == "naïve café – 1986–1990 £275"


def test_real_accents_next_to_mojibake_are_left_alone() -> None:
    assert repair_mojibake("déjà vu, “fine”, Ã© and 1990â\x80\x931993") == "déjà vu, “fine”, é and 1990–1993"


def test_utf8_file_with_mojibake_comes_out_repaired() -> None:
    assert decode_text("Years 1986â\x80\x931990 at Â£300".encode()).text == "Years 1986–1990 at £300"


def test_clean_text_scores_zero_and_misdecoded_text_does_not() -> None:
    assert implausibility(WESTERN) == 0
    assert implausibility(RUSSIAN) == 0
    assert implausibility(RUSSIAN.encode("cp1251").decode("cp1252")) > 0
    assert implausibility(WESTERN.encode("cp1252").decode("cp1251")) > 0


_ACCENTS = "éèàüöçñå"


@st.composite
def western_words(draw: st.DrawFn) -> str:
    """Words that mix ASCII and accented letters, as Western European text does."""
    words = []
    for _ in range(draw(st.integers(1, 8))):
        head = draw(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6))
        accent = draw(st.sampled_from(_ACCENTS))
        tail = draw(st.text("abcdefghijklmnopqrstuvwxyz", max_size=6))
        words.append(head + accent + tail)
    return " ".join(words)


@given(western_words())
def test_any_western_text_in_cp1252_decodes_back_exactly(text: str) -> None:
    assert decode_text(text.encode("cp1252")).text == text


@given(st.text(st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="\ufeff"), max_size=200))
def test_utf8_text_decodes_as_utf8(text: str) -> None:
    decoded = decode_text(text.encode())
    assert decoded.encoding == "utf-8"
    assert decoded.text == repair_mojibake(text)

"""Script routing and the n-grams of unspaced scripts: pure functions, table and property tests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragd.embed.scripts import Script, ngram_text, script_of


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("The harbour master counts the ships.", Script.DETECTED),
        ("Начальник порта считает корабли.", Script.DETECTED),
        ("Ο λιμενάρχης μετράει τα πλοία.", Script.DETECTED),
        ("يعد مدير الميناء السفن كل صباح.", Script.DETECTED),
        ("Trưởng cảng đếm tàu mỗi buổi sáng.", Script.DETECTED),
        ("", Script.DETECTED),  # no letters at all: the detected route, as before
        ("42 — 17 !!! 🚢", Script.DETECTED),
        ("துறைமுகத் தலைவர் கப்பல்களை எண்ணுகிறார்.", Script.TAMIL),
        ("Նավահանգստի պետը հաշվում է նավերը։", Script.ARMENIAN),
        ("ნავსადგურის უფროსი ითვლის გემებს.", Script.OTHER),
        ("מנהל הנמל סופר את הספינות.", Script.OTHER),
        ("बंदरगाह का प्रमुख जहाजों की गिनती करता है।", Script.OTHER),
        ("የወደቡ ኃላፊ መርከቦቹን ይቆጥራል።", Script.OTHER),
        ("港务长每天早上清点船只。", Script.UNSPACED),
        ("焼きたてのパンは市場で売られています。", Script.UNSPACED),
        ("신선한 빵은 시장에서 팝니다.", Script.UNSPACED),
        ("นายท่าเรือนับเรือทุกเช้า", Script.UNSPACED),
        ("ប្រធានកំពង់ផែរាប់កប៉ាល់", Script.UNSPACED),
        ("ပေါင်မုန့် ဈေးမှာ ရောင်းတယ်။", Script.UNSPACED),
        # mixed: the majority script wins, except that a third of unspaced letters is enough
        ("The report on 港务 logistics and shipping schedules", Script.DETECTED),
        ("Microsoft 是一家美国跨国科技公司", Script.UNSPACED),
        ("ნავსადგური port", Script.OTHER),
        ("port ნავს", Script.DETECTED),  # a tie goes to the detected route
    ],
)
def test_the_script_of_a_text(text: str, script: Script) -> None:
    assert script_of(text) is script


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("市场", "市 场 市场"),
        ("新鲜面包。", "新 鲜 面 包 新鲜 鲜面 面包"),
        ("船", "船"),
        ("Hello, 世界! 2024年", "Hello 世 界 世界 2024 年"),  # other words stay whole, punctuation goes
        ("ＡＢＣ ｶﾅ", "ABC カ ナ カナ"),  # NFKC: full-width Latin, half-width kana
        ("시장에서", "시 장 에 서 시장 장에 에서"),
        ("ตลาด", "ต ล า ด ตล ลา าด"),
        ("ที่", "ที่"),  # a letter keeps its combining marks
        ("ផ្សារ", "ផ្សា រ ផ្សារ"),  # a Khmer coeng stacks the next consonant into the cluster
        ("!!! 🚢 ...", ""),
    ],
)
def test_ngram_text(text: str, tokens: str) -> None:
    assert ngram_text(text) == tokens


@given(st.text())
def test_ngram_text_never_fails_and_makes_whitespace_free_tokens(text: str) -> None:
    tokens = ngram_text(text).split(" ")
    assert all(token == token.strip() for token in tokens)


HAN = st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x4E80), min_size=1, max_size=30)


@given(HAN, st.data())
def test_any_piece_of_a_han_text_is_found_in_it(text: str, data: st.DataObject) -> None:
    """Index/query symmetry with no dictionary: every token of a substring is a token of the text."""
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    assert set(ngram_text(text[start:end]).split()) <= set(ngram_text(text).split())

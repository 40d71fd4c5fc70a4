"""BM25 sparse vectors for every language and script: never an error, never empty, index = query tokens.

Two sentences per language (ragd's own, about a harbour and a market); each sentence's query
vector must share more tokens with its own document vector than with the other sentence's.  In the
scripts routed by script (Tamil, Armenian, unspaced and other scripts) a single word taken from
a sentence finds that sentence too; the languages Qdrant has stop words for keep Qdrant's own tokens.
"""

from __future__ import annotations

import pytest
import qdrant_edge

from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.embed.scripts import Script, script_of
from ragd.language import SNOWBALL_LANGUAGES

SENTENCES: dict[str, tuple[str, str]] = {
    "English": ("The harbour master counts the ships every morning.", "Fresh bread is sold at the market."),
    "German": (
        "Der Hafenmeister zählt jeden Morgen die Schiffe.",
        "Frisches Brot wird auf dem Markt verkauft.",
    ),
    "French": ("Le capitaine du port compte les navires chaque matin.", "Le pain frais est vendu au marché."),
    "Spanish": (
        "El capitán del puerto cuenta los barcos cada mañana.",
        "El pan fresco se vende en el mercado.",
    ),
    "Italian": ("Il capitano del porto conta le navi ogni mattina.", "Il pane fresco si vende al mercato."),
    "Portuguese": (
        "O capitão do porto conta os navios todas as manhãs.",
        "O pão fresco é vendido no mercado.",
    ),
    "Dutch": ("De havenmeester telt elke ochtend de schepen.", "Vers brood wordt op de markt verkocht."),
    "Swedish": ("Hamnkaptenen räknar fartygen varje morgon.", "Färskt bröd säljs på marknaden."),
    "Danish": ("Havnefogeden tæller skibene hver morgen.", "Frisk brød sælges på markedet."),
    "Norwegian": ("Havnefogden teller skipene hver morgen.", "Ferskt brød selges på markedet."),
    "Finnish": ("Satamakapteeni laskee laivat joka aamu.", "Tuoretta leipää myydään torilla."),
    "Hungarian": ("A kikötőmester minden reggel megszámolja a hajókat.", "Friss kenyeret árulnak a piacon."),
    "Romanian": (
        "Căpitanul portului numără navele în fiecare dimineață.",
        "Pâinea proaspătă se vinde la piață.",
    ),
    "Turkish": ("Liman başkanı her sabah gemileri sayar.", "Taze ekmek pazarda satılır."),
    "Polish": ("Kapitan portu liczy statki każdego ranka.", "Świeży chleb sprzedaje się na targu."),
    "Czech": ("Kapitán přístavu každé ráno počítá lodě.", "Čerstvý chléb se prodává na trhu."),
    "Vietnamese": ("Trưởng cảng đếm tàu mỗi buổi sáng.", "Bánh mì tươi được bán ở chợ."),
    "Indonesian": ("Syahbandar menghitung kapal setiap pagi.", "Roti segar dijual di pasar."),
    "Russian": ("Начальник порта каждое утро считает корабли.", "Свежий хлеб продают на рынке."),
    "Ukrainian": ("Начальник порту щоранку рахує кораблі.", "Свіжий хліб продають на ринку."),
    "Greek": ("Ο λιμενάρχης μετράει τα πλοία κάθε πρωί.", "Το φρέσκο ψωμί πουλιέται στην αγορά."),
    "Arabic": ("يعد مدير الميناء السفن كل صباح.", "يباع الخبز الطازج في السوق."),
    "Hebrew": ("מנהל הנמל סופר את הספינות בכל בוקר.", "לחם טרי נמכר בשוק."),
    "Persian": ("رئیس بندر هر روز صبح کشتی‌ها را می‌شمارد.", "نان تازه در بازار فروخته می‌شود."),
    "Hindi": ("बंदरगाह का प्रमुख हर सुबह जहाजों की गिनती करता है।", "ताज़ी रोटी बाज़ार में बिकती है।"),
    "Bengali": ("বন্দরের প্রধান প্রতিদিন সকালে জাহাজ গোনেন।", "তাজা রুটি বাজারে বিক্রি হয়।"),
    "Tamil": (
        "துறைமுகத் தலைவர் ஒவ்வொரு காலையும் கப்பல்களை எண்ணுகிறார்.",
        "புதிய ரொட்டி சந்தையில் விற்கப்படுகிறது.",
    ),
    "Telugu": ("ఓడరేవు అధికారి ప్రతి ఉదయం ఓడలను లెక్కిస్తాడు.", "తాజా రొట్టె మార్కెట్లో అమ్ముతారు."),
    "Armenian": ("Նավահանգստի պետը ամեն առավոտ հաշվում է նավերը։", "Թարմ հացը վաճառվում է շուկայում։"),
    "Georgian": ("ნავსადგურის უფროსი ყოველ დილით ითვლის გემებს.", "ახალი პური იყიდება ბაზარში."),
    "Amharic": ("የወደቡ ኃላፊ በየማለዳው መርከቦቹን ይቆጥራል።", "ትኩስ ዳቦ በገበያ ይሸጣል።"),
    "Chinese": ("港务长每天早上清点船只。", "新鲜面包在市场上出售。"),
    "Japanese": ("港長は毎朝船の数を数えます。", "焼きたてのパンは市場で売られています。"),
    "Korean": ("항만장은 매일 아침 배를 셉니다.", "신선한 빵은 시장에서 팝니다."),
    "Thai": ("นายท่าเรือนับเรือทุกเช้า", "ขนมปังสดขายที่ตลาด"),
    "Khmer": ("ប្រធានកំពង់ផែរាប់កប៉ាល់រៀងរាល់ព្រឹក", "នំប៉័ងស្រស់លក់នៅផ្សារ"),
    "Sinhala": ("වරාය ප්‍රධානියා සෑම උදෑසනකම නැව් ගණන් කරයි.", "නැවුම් පාන් වෙළඳපොළේ විකිණේ."),
}


#: One word of one of the sentences, per language whose script picks its tokenisation.
WORDS: dict[str, str] = {
    "Hebrew": "הנמל",
    "Hindi": "बंदरगाह",
    "Bengali": "বন্দরের",
    "Tamil": "கப்பல்களை",
    "Telugu": "లెక్కిస్తాడు",
    "Armenian": "Նավահանգստի",
    "Georgian": "ნავსადგურის",
    "Amharic": "ዳቦ",
    "Chinese": "市场",
    "Japanese": "市場",
    "Korean": "시장",
    "Thai": "ตลาด",
    "Khmer": "ផ្សារ",
    "Sinhala": "ප්‍රධානියා",
}
#: Languages with Qdrant stop words, by their name in SENTENCES.
STOP_WORD_LANGUAGES = [
    name.capitalize() for code, name in SNOWBALL_LANGUAGES.items() if code not in ("ta", "hy")
]


@pytest.fixture(scope="module")
def bm25() -> Bm25SparseEmbedder:
    return Bm25SparseEmbedder()


def _overlap(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    return len(set(a) & set(b))


@pytest.mark.parametrize("language", sorted(SENTENCES))
def test_every_language_gets_matching_document_and_query_vectors(
    bm25: Bm25SparseEmbedder, language: str
) -> None:
    first, second = SENTENCES[language]
    docs = bm25.embed_documents([first, second])
    queries = [bm25.embed_query(first), bm25.embed_query(second)]
    for vector in (*docs, *queries):
        assert vector.indices, f"{language}: an empty sparse vector"
        assert all(v > 0 for v in vector.values)
    for own, other, query in ((docs[0], docs[1], queries[0]), (docs[1], docs[0], queries[1])):
        assert _overlap(query.indices, own.indices) > _overlap(query.indices, other.indices), language


def test_there_are_at_least_thirty_languages() -> None:
    assert len(SENTENCES) >= 30
    assert set(STOP_WORD_LANGUAGES) <= set(SENTENCES)


@pytest.mark.parametrize("language", sorted(WORDS))
def test_one_word_finds_its_sentence_in_every_script(bm25: Bm25SparseEmbedder, language: str) -> None:
    word = WORDS[language]
    own, other = sorted(SENTENCES[language], key=lambda sentence: word not in sentence)
    assert word in own
    assert script_of(own) is not Script.DETECTED  # tokenised by script, not by a guessed language
    docs = bm25.embed_documents([own, other])
    query = bm25.embed_query(word)
    assert _overlap(query.indices, docs[0].indices) > _overlap(query.indices, docs[1].indices), language


@pytest.mark.parametrize("language", STOP_WORD_LANGUAGES)
def test_languages_with_stop_words_keep_qdrants_own_tokens(language: str) -> None:
    """The tokens of the languages Qdrant has stop words for are unchanged (BM25_VERSION holds)."""
    engine = qdrant_edge.Bm25(qdrant_edge.Bm25Config(k=1.2, b=0.75, avg_len=100.0, language=language.lower()))
    for sentence in SENTENCES[language]:
        ours = Bm25SparseEmbedder(language.lower()).embed_documents([sentence])[0]
        theirs = engine.embed_document(sentence)
        assert (ours.indices, ours.values) == (tuple(theirs.indices), tuple(theirs.values))


def test_text_without_words_is_an_empty_vector_not_an_error(bm25: Bm25SparseEmbedder) -> None:
    for text in ["", "   ", "!!! ??? ...", "🚢🚢🚢", "—", "。、「」", "\u200d\u200c", "🇯🇵 ‼ ⁉", "¿¡« »"]:
        assert bm25.embed_documents([text])[0].indices == ()
        assert bm25.embed_query(text).indices == ()

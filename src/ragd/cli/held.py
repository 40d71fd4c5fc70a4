"""Who holds the index: this command, or a running server it goes through instead.

Only one process may open an embedded index.  When a server holds it and has recorded where it
listens (:mod:`ragd.cli.server_record`), ``ragd search``, ``stats`` and ``ingest`` talk to it
(:mod:`ragd.cli.remote`) and say so in one dim line on stderr; any other command that needs the
index says which server holds it.  No live record: the store's own lock decides, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from ragd.bootstrap import index_in_use
from ragd.cli.remote import RemoteIndex, live_server
from ragd.cli.runner import err_console, run_or_exit
from ragd.cli.server_record import ServerRecord
from ragd.errors import StoreLocked
from ragd.settings import Settings

T = TypeVar("T")


def holding_server(settings: Settings) -> ServerRecord | None:
    """The live server that holds this index, or None (the index is free, or no server says so)."""
    if not index_in_use(settings):
        return None
    return live_server(settings.data_dir)


def via_server(settings: Settings) -> ServerRecord | None:
    """:func:`holding_server`, announced: the command will go through it."""
    record = holding_server(settings)
    if record is not None:
        err_console.print(f"using the server at {record.url}", style="dim", highlight=False)
    return record


def run_remote(settings: Settings, record: ServerRecord, job: Callable[[RemoteIndex], Awaitable[T]]) -> T:
    """Run ``job`` against the server (a RagError: ``error CODE: message``, exit 2, as locally)."""
    key = settings.server.api_key

    async def main() -> T:
        async with RemoteIndex(record.url, key.get_secret_value() if key else None) as remote:
            return await job(remote)

    return run_or_exit(main)


def refuse_if_served(settings: Settings) -> None:
    """STORE_LOCKED naming the server, for a command that does not go through one."""
    record = holding_server(settings)
    if record is not None:
        raise StoreLocked(
            f"the index at {settings.data_dir} is held by the ragd server at {record.url} "
            f"(pid {record.pid}); this command does not go through a server",
            hint="stop the server (Ctrl+C) and run it again, or use another --data-dir",
        )

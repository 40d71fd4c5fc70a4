"""What every command shares: the consoles, settings read once with clear errors, and running a
coroutine so that a RagError becomes ``error CODE: message`` and exit code 2."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from ragd.errors import RagError
from ragd.settings import Settings

T = TypeVar("T")
console = Console()
err_console = Console(stderr=True)


def load_settings(data_dir: Path | None = None, **overrides: Any) -> Settings:
    try:
        settings = Settings()
    except ValidationError as exc:
        for err in exc.errors():
            where = "__".join(str(p) for p in err["loc"]).upper()
            err_console.print(f"[red]error[/red] CONFIGURATION_ERROR: RAGD_{where}: {err['msg']}")
        raise typer.Exit(2) from None
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return settings.model_copy(update=overrides) if overrides else settings


def run_or_exit(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    try:
        return asyncio.run(main())
    except RagError as exc:
        err_console.print(f"[red]error[/red] {exc.code}: {exc}")
        raise typer.Exit(2) from exc

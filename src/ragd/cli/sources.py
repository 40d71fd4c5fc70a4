"""``ragd sources``: a dataset's sources with their schedules, over HTTP to a running ``ragd serve``
(the same routes as the UI's Sources tab: docs/knowledge-bases.md, "Schedules").

    ragd sources list DATASET
    ragd sources schedule DATASET SOURCE --every 3600 | --cron "0 3 * * *" --tz Europe/Berlin | --none
    ragd sources pause DATASET SOURCE / ragd sources resume DATASET SOURCE
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import httpx
import typer

from ragd.cli.runner import console, err_console

sources_app = typer.Typer(help="A dataset's sources and their schedules (over HTTP).", no_args_is_help=True)

Url = Annotated[str, typer.Option(help="the ragd server", envvar="RAGD_URL")]
Key = Annotated[str | None, typer.Option(help="API key", envvar="RAGD_API_KEY")]
DatasetArg = Annotated[str, typer.Argument(help="the dataset's id")]
SourceArg = Annotated[str, typer.Argument(help="the source's id (ragd sources list)")]
LOCAL = "http://127.0.0.1:8000"


def _call(url: str, key: str | None, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.request(method, url.rstrip("/") + path, json=body, headers=headers, timeout=30.0)
    except httpx.HTTPError as exc:
        err_console.print(f"[red]error[/red] cannot reach {url}: {exc}")
        raise typer.Exit(2) from exc
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", {})
            message = f"{detail.get('code')}: {detail.get('error') or detail.get('message')}"
        except (ValueError, AttributeError):
            message = f"HTTP {response.status_code}: {response.text[:300]}"
        err_console.print(f"[red]error[/red] {message}", highlight=False, markup=False)
        raise typer.Exit(1)
    return response.json()


def schedule_text(source: dict[str, Any]) -> str:
    """A source's schedule in a few words ("every 3600 s", "cron 0 3 * * * Europe/Berlin", "–")."""
    sc = source.get("schedule")
    if not sc:
        return "–"
    if sc.get("cron"):
        return f"cron {sc['cron']} {sc.get('timezone') or 'UTC'}"
    return f"every {sc['interval_s']:g} s"


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "–"


def _reach(source: dict[str, Any]) -> str:
    config = source.get("config") or {}
    return str(
        config.get("path") or config.get("url") or f"s3://{config.get('bucket')}/{config.get('prefix', '')}"
    )


@sources_app.command("list")
def sources_list(dataset: DatasetArg, url: Url = LOCAL, key: Key = None) -> None:
    """Each source with its schedule, next run, last run and the result of its last sync."""
    for s in _call(url, key, "GET", f"/api/v1/datasets/{dataset}/sources")["sources"]:
        result = s.get("last_error") or ("ok" if s.get("last_synced_at") else "–")
        nxt = "paused" if s.get("paused") else _when(s.get("next_run_at"))
        synced = _when(s.get("last_synced_at"))
        lines = [
            f"{s['id']}  {s['kind']}  {_reach(s)}" + ("  (disabled)" if s.get("disabled") else ""),
            f"  schedule: {schedule_text(s)}" + (f" · next run: {nxt}" if s.get("schedule") else ""),
            f"  last run: {_when(s.get('last_run_at'))} · last sync: {synced} ({result})",
        ]
        for line in lines:
            console.print(line, highlight=False, markup=False, soft_wrap=True)


def _show(source: dict[str, Any]) -> None:
    paused = " (paused)" if source.get("paused") else ""
    nxt = _when(source.get("next_run_at"))
    console.print(
        f"source {source['id']}: {schedule_text(source)}{paused}; next run {nxt}",
        highlight=False,
        markup=False,
    )


@sources_app.command("schedule")
def sources_schedule(
    dataset: DatasetArg,
    source: SourceArg,
    every: Annotated[float | None, typer.Option(help="seconds between two syncs")] = None,
    cron: Annotated[str | None, typer.Option(help="5 fields: minute hour day month weekday")] = None,
    tz: Annotated[str | None, typer.Option(help="the cron's IANA time zone (UTC)")] = None,
    none: Annotated[bool, typer.Option("--none", help="no schedule: by hand only")] = False,
    url: Url = LOCAL,
    key: Key = None,
) -> None:
    """Set (or with --none clear) a source's schedule: --every SECONDS, or --cron EXPR [--tz ZONE]."""
    path = f"/api/v1/datasets/{dataset}/sources/{source}/schedule"
    if none:
        _show(_call(url, key, "DELETE", path)["source"])
        return
    body: dict[str, Any] = {"interval_s": every} if every is not None else {}
    if cron is not None:
        body |= {"cron": cron, "timezone": tz}
    _show(_call(url, key, "PUT", path, body)["source"])


@sources_app.command("pause")
def sources_pause(dataset: DatasetArg, source: SourceArg, url: Url = LOCAL, key: Key = None) -> None:
    """Fire nothing until resumed; the schedule is kept."""
    _show(_call(url, key, "POST", f"/api/v1/datasets/{dataset}/sources/{source}/pause")["source"])


@sources_app.command("resume")
def sources_resume(dataset: DatasetArg, source: SourceArg, url: Url = LOCAL, key: Key = None) -> None:
    """Fire again from the next slot (no catching up)."""
    _show(_call(url, key, "POST", f"/api/v1/datasets/{dataset}/sources/{source}/resume")["source"])

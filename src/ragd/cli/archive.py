"""``ragd export DATASET_ID DEST`` and ``ragd import SRC``: a dataset's archive, through a running
server's API (``GET /api/v1/datasets/{id}/export``, ``POST /api/v1/datasets/import``).

The server is ``--url`` (``RAGD_URL``), else the one recorded in the data dir; the key is ``--key``
(``RAGD_API_KEY``), else ``RAGD_SERVER__API_KEY``.  An export is written to ``DEST.part`` as it
streams and renamed when complete; a server's refusal exits 2 with its code, as other commands do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx
import typer

from ragd.cli.remote import TIMEOUT, live_server
from ragd.cli.runner import console, err_console, load_settings
from ragd.errors import InvalidRequest

Url = Annotated[
    str | None,
    typer.Option(help="the ragd server (default: the one serving the data dir)", envvar="RAGD_URL"),
]
Key = Annotated[
    str | None, typer.Option(help="API key (default: RAGD_SERVER__API_KEY)", envvar="RAGD_API_KEY")
]


def export_command(
    dataset_id: Annotated[str, typer.Argument(help="the dataset to export")],
    dest: Annotated[Path, typer.Argument(help="the archive to write (.tar)", dir_okay=False)],
    url: Url = None,
    key: Key = None,
) -> None:
    """Write a dataset's portable archive: settings, files, stored uploads, chunks with vectors."""
    base, headers = _server(url, key)
    part = dest.with_name(dest.name + ".part")
    try:
        with (
            httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT) as client,
            client.stream("GET", f"/api/v1/datasets/{dataset_id}/export") as answer,
        ):
            if answer.status_code != 200:
                answer.read()
                _fail(answer)
            with part.open("wb") as out:
                for block in answer.iter_bytes():
                    out.write(block)
    except httpx.HTTPError as exc:
        part.unlink(missing_ok=True)
        _unreachable(base, exc)
    part.replace(dest)
    console.print(f"dataset {dataset_id} exported to {dest} ({dest.stat().st_size:,} bytes)")


def import_command(
    src: Annotated[
        Path, typer.Argument(help="an archive written by ragd export", exists=True, dir_okay=False)
    ],
    tenant: Annotated[str | None, typer.Option(help="the tenant id (the service key must name one)")] = None,
    name: Annotated[str | None, typer.Option(help="the new dataset's name (default: the archive's)")] = None,
    reembed: Annotated[bool, typer.Option(help="index the uploads again if the model differs")] = False,
    url: Url = None,
    key: Key = None,
) -> None:
    """Create a dataset from an archive, its vectors as they are (nothing is embedded)."""
    base, headers = _server(url, key)
    params: dict[str, Any] = {"reembed": "true" if reembed else "false"}
    if tenant:
        params["tenant_id"] = tenant
    if name:
        params["name"] = name
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT) as client, src.open("rb") as fh:
            answer = client.post(
                "/api/v1/datasets/import",
                params=params,
                files={"archive": (src.name, fh, "application/x-tar")},
            )
    except httpx.HTTPError as exc:
        _unreachable(base, exc)
    if answer.status_code != 201:
        _fail(answer)
    made = answer.json()
    ds = made["dataset"]
    line = f"dataset [bold]{ds['name']}[/bold] id {ds['id']}: {made['files']} files, {made['points']} chunks"
    if made.get("job"):
        line += f"; re-index job {made['job']['id']} (ragd jobs watch {made['job']['id']})"
    console.print(line)


def _server(url: str | None, key: str | None) -> tuple[str, dict[str, str]]:
    settings = load_settings()
    if url is None:
        record = live_server(settings.data_dir)
        if record is None:
            err_console.print(
                f"[red]error[/red] {InvalidRequest.code}: no ragd server serves {settings.data_dir};"
                " give --url (or RAGD_URL)"
            )
            raise typer.Exit(2)
        url = record.url
    if key is None and settings.server.api_key is not None:
        key = settings.server.api_key.get_secret_value()
    return url.rstrip("/"), ({"Authorization": f"Bearer {key}"} if key else {})


def _fail(answer: httpx.Response) -> NoReturn:
    try:
        detail = answer.json().get("detail")
    except ValueError:
        detail = None
    if isinstance(detail, dict) and "code" in detail:
        err_console.print(f"[red]error[/red] {detail['code']}: {detail.get('error', '')}")
    else:
        err_console.print(f"[red]error[/red] HTTP {answer.status_code}: {answer.text[:300]}")
    raise typer.Exit(2)


def _unreachable(url: str, exc: httpx.HTTPError) -> NoReturn:
    err_console.print(f"[red]error[/red] UPSTREAM_FAILED: the ragd server at {url} did not answer ({exc})")
    raise typer.Exit(2) from exc

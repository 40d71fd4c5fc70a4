"""``ragd migrate -c DATASET``: move a dataset to another dense model or chunking (issue 31 §1).

Embedded (no server holds the index): the use-cases of :mod:`ragd.kb.migrations` run in this
process as the service key does, and a job worker runs here until the migration's job has finished,
as a server's would.  Through a server (``--url``, or the server holding the data dir): the
migrations API, its job's progress polled from ``GET …/migrations/{mid}``.  Either way the outcome
is the API's migration JSON (``--json``) or a summary: switched, or held and why, the evaluation of
both versions, and the command to switch or roll back.

A collection written by ``ragd ingest`` is not a dataset (no catalog knows its files): it is
refused with what to do instead.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragd.bootstrap import Services
from ragd.cli.held import via_server
from ragd.cli.progress import RateProgress
from ragd.cli.remote import call_json as _call
from ragd.cli.runner import console, err_console, load_settings, run_job_here, run_or_exit
from ragd.errors import InvalidRequest, NotFound, RagError
from ragd.ingest.inventory import inventory
from ragd.kb import audit, migrations
from ragd.kb_types import ChunkingSpec, Job, Migration
from ragd.settings import Settings
from ragd.types import ChunkStrategy

#: how often the job's progress is read
POLL_S = 0.25
#: how long a finished job's migration may stay ``building`` (the worker's tidy ends it)
GRACE_S = 30.0
_TIMEOUT = httpx.Timeout(30.0, read=120.0)
#: states a ``ragd migrate`` run ends well in (exit 0)
GOOD = frozenset({"switched", "ready"})


@dataclass(frozen=True, slots=True)
class Start:
    """What to migrate to: ``embedding`` None keeps the model, ``chunking`` None keeps the chunking."""

    embedding: str | None = None
    chunking: ChunkingSpec | None = None
    auto_switch: bool = True
    max_regression: float | None = None

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"auto_switch": self.auto_switch}
        if self.embedding is not None:
            out["embedding"] = self.embedding
        if self.chunking is not None:
            c = self.chunking
            out["chunking"] = {
                "strategy": c.strategy.value if c.strategy else None,
                "size": c.size,
                "overlap": c.overlap,
            }
        if self.max_regression is not None:
            out["max_regression"] = self.max_regression
        return out


@dataclass(frozen=True, slots=True)
class Action:
    """One run of the command: ``start`` (with ``spec``), ``list``, ``switch``, ``rollback``, ``cancel``."""

    verb: str
    dataset: str
    tenant: str | None = None
    migration_id: str | None = None
    override: bool = False
    spec: Start = Start()


# -- which dataset ---------------------------------------------------------------------------------


def raw_collection(name: str) -> InvalidRequest:
    return InvalidRequest(
        f"{name[:200]!r} is a collection written by `ragd ingest`, not a dataset: only a dataset "
        "(its files recorded in the catalog) can be migrated. Either remove it "
        f"(`ragd rm --all -c {name[:200]}`) and ingest it again with RAGD_EMBEDDING__MODEL / "
        "RAGD_CHUNKING__* set, or create a dataset (API or web UI), upload the files into it and "
        "run `ragd migrate -c DATASET`"
    )


def pick_dataset(
    rows: Sequence[dict[str, Any]], ref: str, tenant_ids: set[str] | None, collections: Sequence[str]
) -> dict[str, Any]:
    """The dataset ``ref`` names (its id, collection name or name), among ``tenant_ids``'s if given."""
    if tenant_ids is not None:
        rows = [r for r in rows if r["tenant_id"] in tenant_ids]
    for key in ("id", "collection_name", "name"):
        found = [r for r in rows if r[key] == ref]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InvalidRequest(
                f"datasets of several tenants are named {ref[:200]!r}: give --tenant (its name or id), "
                "or the dataset's id"
            )
    if ref in collections:
        raise raw_collection(ref)
    raise NotFound(f"no dataset with the id, name or collection name {ref[:200]!r}")


def _tenant_ids(tenants: Sequence[tuple[str, str]], ref: str) -> set[str]:
    ids = {tid for tid, name in tenants if ref in (tid, name)}
    if not ids:
        raise NotFound(f"no tenant with the id or name {ref[:200]!r}")
    return ids


# -- embedded --------------------------------------------------------------------------------------


def _json(m: Migration, job: dict[str, Any] | None = None) -> dict[str, Any]:
    from ragd.api.routes.migrations import migration_out  # the API's JSON, one shape everywhere

    return migration_out(m, job)


def _job_json(job: Job) -> dict[str, Any]:
    from ragd.api.kb_schemas import job_out

    return job_out(job)


async def run_embedded(services: Services, action: Action, bar: Follow) -> dict[str, Any]:
    kb = services.knowledge()
    audit.CLIENT.set(audit.CLI_CLIENT)  # the audit records say it came from the command line
    who = migrations.SERVICE
    rows = [
        {"id": d.id, "name": d.name, "collection_name": d.collection_name, "tenant_id": d.tenant_id}
        for d in await kb.catalog.list_datasets(None)
    ]
    tenant_ids = None
    if action.tenant is not None:
        tenant_ids = _tenant_ids([(t.id, t.name) for t in await kb.catalog.list_tenants()], action.tenant)
    collections: list[str] = []
    if not any(action.dataset in (r["id"], r["name"], r["collection_name"]) for r in rows):
        collections = list((await inventory(services.store)).files)  # what the error says only
    picked = pick_dataset(rows, action.dataset, tenant_ids, collections)
    dataset_id, name = str(picked["id"]), str(picked["name"])
    mid = action.migration_id or ""
    if action.verb == "list":
        found = await migrations.list_migrations(kb, who, dataset_id)
        return {"dataset": name, "dataset_id": dataset_id, "migrations": [_json(m) for m in found]}
    if action.verb == "switch":
        done = await migrations.switch_migration(kb, who, dataset_id, mid, override=action.override)
        return _json(done) | {"dataset": name}
    if action.verb == "rollback":
        return _json(await migrations.rollback_migration(kb, who, dataset_id, mid)) | {"dataset": name}
    if action.verb == "cancel":
        return _json(await migrations.cancel_migration(kb, who, dataset_id, mid)) | {"dataset": name}
    before = sum(f.chunks for f in await kb.catalog.list_files(dataset_id, limit=1_000_000))
    spec = action.spec
    started = await migrations.start_migration(
        kb,
        who,
        dataset_id,
        embedding=spec.embedding,
        chunking=spec.chunking,
        auto_switch=spec.auto_switch,
        max_regression=spec.max_regression,
    )
    job = await _run_job(services, started, bar)
    await migrations.tidy_migrations(kb)  # a job that failed or was cancelled ends its migration
    ended = await kb.catalog.get_migration(started.id) or started
    return _json(ended, _job_json(job)) | {"dataset": name, "chunks_before": before}


async def _run_job(services: Services, migration: Migration, bar: Follow) -> Job:
    """Run a job worker here until the migration's job has finished, following its counts."""

    def counts(job: Job) -> None:
        bar.update(done=job.done + job.failed, total=job.total, chunks=job.chunks, failed=job.failed)

    return await run_job_here(
        services, migration.job_id or "", f"the job of migration {migration.id}", counts
    )


# -- through a server ------------------------------------------------------------------------------


async def _remote_dataset(client: httpx.AsyncClient, action: Action) -> dict[str, Any]:
    rows = (await _call(client, "GET", "/api/v1/datasets"))["datasets"]
    tenant_ids = None
    if action.tenant is not None:
        tenant_ids = {action.tenant} if any(r["tenant_id"] == action.tenant for r in rows) else None
        if tenant_ids is None:  # a name: only the service key lists tenants
            tenants = (await _call(client, "GET", "/api/v1/tenants"))["tenants"]
            tenant_ids = _tenant_ids([(t["id"], t["name"]) for t in tenants], action.tenant)
    collections: list[str] = []
    if not any(action.dataset in (r["id"], r["name"], r["collection_name"]) for r in rows):
        with suppress(RagError):  # what the error says only: a key may not read the stats
            stats = await _call(client, "GET", "/api/v1/stats")
            collections = [c["name"] for c in stats["collections"]]
    return pick_dataset(rows, action.dataset, tenant_ids, collections)


async def run_remote(url: str, key: str | None, action: Action, bar: Follow) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers, timeout=_TIMEOUT) as client:
        picked = await _remote_dataset(client, action)
        name = str(picked["name"])
        path = f"/api/v1/datasets/{picked['id']}/migrations"
        one = f"{path}/{action.migration_id}"
        if action.verb == "list":
            found = await _call(client, "GET", path)
            return {"dataset": name, "dataset_id": picked["id"], "migrations": found["migrations"]}
        if action.verb == "switch":
            done = await _call(client, "POST", f"{one}/switch", json={"override": action.override})
            return dict(done) | {"dataset": name}
        if action.verb in ("rollback", "cancel"):
            return dict(await _call(client, "POST", f"{one}/{action.verb}")) | {"dataset": name}
        started = await _call(client, "POST", path, json=action.spec.body())
        current = await _follow_remote(client, f"{path}/{started['id']}", bar)
    return dict(current) | {"dataset": name, "chunks_before": int(picked.get("chunks") or 0)}


async def _follow_remote(client: httpx.AsyncClient, path: str, bar: Follow) -> dict[str, Any]:
    waited = 0.0
    while True:
        current: dict[str, Any] = await _call(client, "GET", path)
        job = current.get("job")
        if job is not None:
            done = int(job["done"]) + int(job["failed"])
            bar.update(
                done=done, total=int(job["total"]), chunks=int(job["chunks"]), failed=int(job["failed"])
            )
        if current["state"] != "building":
            return current
        if job is not None and job["finished"]:
            waited += POLL_S
            if waited > GRACE_S:
                return current
        await asyncio.sleep(POLL_S)


# -- progress and the outcome ----------------------------------------------------------------------


class Follow:
    """The job's progress bar, shown from its first counts on."""

    def __init__(self, shown: Console) -> None:
        self._console = shown
        self._bar: RateProgress | None = None

    def update(self, *, done: int, total: int, chunks: int, failed: int) -> None:
        if self._bar is None:
            self._bar = RateProgress(self._console, "Migrating", total, unit="files").__enter__()
        self._bar.update_to(done=done, total=total, chunks=chunks, failed=failed)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def _version(v: dict[str, Any]) -> str:
    c = v["chunking"]
    shape = c["strategy"] or "default"
    if c["size"] is not None:
        shape += f" size {c['size']}"
    if c["overlap"] is not None:
        shape += f" overlap {c['overlap']}"
    return f"model {v['embedding']}, chunking {shape}"


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "-"


def render_list(out: dict[str, Any]) -> None:
    table = Table(title=f"migrations of dataset {escape(out['dataset'])} (newest first)")
    for column in ("id", "state", "source → target", "created"):
        table.add_column(column, overflow="fold")
    for m in out["migrations"]:
        state = m["state"] + (f" ({m['held']})" if m["held"] and m["state"] == "ready" else "")
        table.add_row(
            m["id"],
            state,
            escape(f"{_version(m['source'])} → {_version(m['target'])}"),
            _when(m["created_at"]),
        )
    console.print(table)


def _reports(reports: dict[str, Any]) -> None:
    old, new = reports.get("old"), reports.get("new")
    if not old or not new:
        return
    k = new.get("k", migrations.EVAL_K)
    table = Table(title=f"evaluation set: {reports.get('queries', 0)} labelled queries")
    for column in ("version", "nDCG@10", f"recall@{k}", "MRR@10"):
        table.add_column(column, justify="left" if column == "version" else "right")
    for label, r in (("old", old), ("new", new)):
        table.add_row(label, f"{r['ndcg_at_10']:.4f}", f"{r['recall_at_k']:.4f}", f"{r['mrr_at_10']:.4f}")
    console.print(table)
    wins, losses = reports.get("wins", []), reports.get("losses", [])
    console.print(f"{len(wins)} wins, {len(losses)} losses (queries the new version ranks better, worse)")


def render_outcome(out: dict[str, Any], command: str, *, started: bool) -> None:
    """What a migration came to, and the command that goes on from there."""
    mid, state = out["id"], out["state"]
    target = escape(_version(out["target"]))
    source = escape(_version(out["source"]))
    job = out.get("job")
    if job is not None and "chunks_before" in out:
        console.print(
            f"{job['done']} files in the new version ({job['failed']} failed): "
            f"{out['chunks_before']} chunks → {job['chunks']} chunks"
        )
    if started:
        _reports(out.get("reports") or {})
    if state == "switched":
        console.print(f"[green]switched[/green]: dataset {escape(out['dataset'])} serves {target}")
        console.print(f"roll back (until {_when(out['retain_until'])}): {command} --rollback {mid}")
    elif state == "rolled_back":
        console.print(f"[yellow]rolled back[/yellow]: dataset {escape(out['dataset'])} serves {source}")
        console.print(f"switch again (until {_when(out['retain_until'])}): {command} --switch {mid}")
    elif state == "ready":
        console.print(f"[yellow]held[/yellow] ({out['held']}): {escape(out['message'] or '')}")
        override = " --override" if out["held"] in migrations.OVERRIDE_NEEDED else ""
        console.print(f"serve it: {command} --switch {mid}{override}   drop it: {command} --cancel {mid}")
    elif state == "building":
        console.print(f"migration {mid} is still building: {command} --list")
    else:
        error = out.get("error") or {}
        console.print(
            f"[red]{state}[/red]: {escape(str(error.get('code') or ''))} "
            f"{escape(str(error.get('message') or out.get('message') or ''))}".rstrip()
        )
        console.print(f"the dataset still serves {source}")


# -- the command -----------------------------------------------------------------------------------


def migrate_command(
    collection: Annotated[
        str, typer.Option("--collection", "-c", help="the dataset: its name, id or collection name")
    ],
    model: Annotated[
        str | None,
        typer.Option("--model", help="the dense model to move to: a configured name, or 'default'"),
    ] = None,
    chunking: Annotated[
        str | None,
        typer.Option("--chunking", help="the chunking strategy: token, markdown, sentence, recursive"),
    ] = None,
    chunk_size: Annotated[
        int | None, typer.Option("--chunk-size", min=16, max=100_000, help="tokens or characters")
    ] = None,
    overlap: Annotated[int | None, typer.Option("--overlap", min=0, max=50_000)] = None,
    no_auto_switch: Annotated[
        bool, typer.Option("--no-auto-switch", help="build and evaluate, then wait for --switch")
    ] = False,
    max_regression: Annotated[
        float | None,
        typer.Option("--max-regression", min=0.0, max=1.0, help="the nDCG@10 drop a switch accepts"),
    ] = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="the dataset's tenant (name or id), when several share it")
    ] = None,
    list_them: Annotated[bool, typer.Option("--list", help="the dataset's migrations")] = False,
    switch: Annotated[
        str | None, typer.Option("--switch", metavar="MID", help="serve this migration's new version")
    ] = None,
    override: Annotated[
        bool, typer.Option("--override", help="--switch: although its evaluation or failed files held it")
    ] = False,
    rollback: Annotated[
        str | None, typer.Option("--rollback", metavar="MID", help="serve its old version again")
    ] = None,
    cancel: Annotated[
        str | None, typer.Option("--cancel", metavar="MID", help="stop one that has not switched")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="the API's JSON on stdout")] = False,
    url: Annotated[
        str | None, typer.Option("--url", help="through this ragd server", envvar="RAGD_URL")
    ] = None,
    key: Annotated[str | None, typer.Option("--key", help="its API key", envvar="RAGD_API_KEY")] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="index folder (default: RAGD_DATA_DIR or .ragd)")
    ] = None,
) -> None:
    """Move a dataset to another dense model or chunking while it keeps serving
    (docs/knowledge-bases.md, "Migrations"); or list, switch, roll back or cancel its migrations."""
    chosen = [(v, m) for v, m in (("switch", switch), ("rollback", rollback), ("cancel", cancel)) if m]
    if len(chosen) + int(list_them) > 1:
        raise typer.BadParameter("give one of --list, --switch, --rollback, --cancel")
    starting = not chosen and not list_them
    shaping = (model, chunking, chunk_size, overlap, max_regression)
    if not starting and (any(x is not None for x in shaping) or no_auto_switch):
        raise typer.BadParameter("--model, --chunking, --chunk-size, --overlap and co. start a migration")
    if override and not switch:
        raise typer.BadParameter("--override goes with --switch", param_hint="--override")
    spec = Start()
    if starting:
        try:
            strategy = None if chunking is None else ChunkStrategy.parse(chunking)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--chunking") from exc
        shape = None
        if strategy is not None or chunk_size is not None or overlap is not None:
            shape = ChunkingSpec(strategy, chunk_size, overlap)
        spec = Start(model, shape, not no_auto_switch, max_regression)
    verb, mid = chosen[0] if chosen else ("list" if list_them else "start", None)
    action = Action(verb, collection, tenant, mid, override, spec)
    out = follow(load_settings(data_dir), action, url, key, as_json=as_json)
    if as_json:
        sys.stdout.write(json.dumps(out) + "\n")
    elif verb == "list":
        render_list(out)
    else:
        where = f" --tenant {tenant}" if tenant else ""
        render_outcome(out, f"ragd migrate -c {collection}{where}", started=verb == "start")
    if verb == "start" and out["state"] not in GOOD:
        raise typer.Exit(1)


def follow(
    settings: Settings, action: Action, url: str | None, key: str | None, *, as_json: bool
) -> dict[str, Any]:
    """Run ``action`` through ``url`` or the server holding the index, else embedded."""
    from ragd.cli.app import _configure_logging, _run  # the commands' shared runner

    record = None if url else via_server(settings)
    bar = Follow(err_console if as_json else console)
    try:
        if url or record:
            secret = settings.server.api_key
            key = key if url else (secret.get_secret_value() if secret else None)
            target = url or (record.url if record else "")
            _configure_logging(settings, quiet=True)
            return run_or_exit(lambda: run_remote(target, key, action, bar))
        return _run(settings, lambda services: run_embedded(services, action, bar))
    except KeyboardInterrupt:
        bar.close()
        goes_on = (
            "on the server" if url or record else "when a job worker runs on this data dir (`ragd serve`)"
        )
        err_console.print(
            f"interrupted: a migration that started goes on {goes_on}; "
            f"`ragd migrate -c {action.dataset} --list` shows it, --cancel MID stops it"
        )
        raise typer.Exit(130) from None
    finally:
        bar.close()

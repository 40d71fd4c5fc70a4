"""``ragd``: the command line.  Thin: it parses, calls the same use-cases as the API, renders."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import socket
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.markup import escape

from ragd.bootstrap import Services, open_services
from ragd.cli import evalset as evalset_cli
from ragd.cli import render
from ragd.cli.archive import export_command, import_command
from ragd.cli.audit import audit_command
from ragd.cli.backup import backup_command, restore_command
from ragd.cli.evalset import DatasetEval
from ragd.cli.held import refuse_if_served, run_remote, via_server
from ragd.cli.kb import grants_app, jobs_app, keys_app, tenants_app
from ragd.cli.migrate import migrate_command
from ragd.cli.progress import RateProgress
from ragd.cli.remote import RemoteIndex, ingest_many
from ragd.cli.runner import console, err_console, load_settings, run_or_exit
from ragd.cli.server_record import ServerRecord, remove_record, server_url, write_record
from ragd.cli.sources import sources_app
from ragd.errors import Conflict, InvalidFilter, RagError
from ragd.evaluation.beir import load_dataset
from ragd.evaluation.runner import evaluate_mode, index_dataset
from ragd.ingest.batch import ingest_files
from ragd.ingest.inventory import Inventory, inventory
from ragd.ingest.removal import RemovedFile, prune_missing, remove_collection, remove_file
from ragd.ingest.sources import collect
from ragd.observe.logging import configure_logging
from ragd.retrieve.filters import parse_filter_json
from ragd.retrieve.pipeline import PipelineRequest
from ragd.settings import Settings
from ragd.types import Hit, IndexManifest, IngestReport, IngestStatus, MetaFilter, SearchKnobs, SearchMode

app = typer.Typer(
    name="ragd",
    help="Ingest documents, search them, evaluate retrieval.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
T = TypeVar("T")

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="index folder (default: RAGD_DATA_DIR or .ragd)")
]
Collection = Annotated[str | None, typer.Option("--collection", "-c", help="logical collection name")]


def _configure_logging(settings: Settings, *, quiet: bool = False) -> None:
    """Logs to stderr; ``quiet`` (one-shot commands) shows warnings and errors unless a level is asked for."""
    log = settings.log
    if quiet and log.level.upper() == "INFO":
        log = log.model_copy(update={"level": "WARNING"})
    try:
        configure_logging(log)
    except RagError as exc:
        err_console.print(f"[red]error[/red] {exc.code}: {exc}")
        raise typer.Exit(2) from None


def _run(settings: Settings, job: Callable[[Services], Awaitable[T]]) -> T:
    """Open the services, run ``job``, and turn a RagError into a clear message and exit code 2."""
    _configure_logging(settings, quiet=True)

    async def main() -> T:
        refuse_if_served(settings)  # say which server holds the index, before loading any model
        async with open_services(settings) as services:
            return await job(services)

    return run_or_exit(main)


def _remote(settings: Settings, record: ServerRecord, job: Callable[[RemoteIndex], Awaitable[T]]) -> T:
    _configure_logging(settings, quiet=True)
    return run_remote(settings, record, job)


#: files uploaded at once when ``ragd ingest`` goes through a server (it bounds its own extraction)
REMOTE_UPLOADS = 4


def _on_done(bar: RateProgress) -> Callable[[IngestReport], None]:
    def done(report: IngestReport) -> None:
        bar.advance(
            chunks=report.chunks if report.status is IngestStatus.INDEXED else 0,
            failed=report.status is IngestStatus.FAILED,
        )

    return done


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="files and folders to index")],
    collection: Collection = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help=".gitignore-style pattern")] = None,
    force: Annotated[bool, typer.Option("--force", help="re-index unchanged files")] = False,
    prune: Annotated[
        bool, typer.Option("--prune/--no-prune", help="remove indexed files gone from the folders")
    ] = True,
    data_dir: DataDir = None,
) -> None:
    """Index files and folders (.gitignore files are honoured) and remove the indexed files a folder
    no longer has (--no-prune keeps them); exits 1 if any file failed."""
    settings = load_settings(data_dir)
    name = collection or settings.default_collection
    unlisted: list[IngestReport] = []
    try:
        files = collect(paths, ignore or (), unlisted=unlisted.append)
    except RagError as exc:
        err_console.print(f"[red]error[/red] {exc.code}: {exc}")
        raise typer.Exit(2) from exc
    folders = [path for path in paths if path.is_dir()] if prune else []

    async def through(remote: RemoteIndex) -> list[IngestReport]:
        started = time.perf_counter()
        with RateProgress(console, f"Indexing into {name}", len(files)) as bar:
            reports = await ingest_many(
                remote, files, name, force=force, concurrency=REMOTE_UPLOADS, on_done=_on_done(bar)
            )
        render.ingest_summary(console, [*unlisted, *reports], time.perf_counter() - started)
        if folders:
            render.not_pruned(console, remote.url)
        return [*unlisted, *reports]

    async def job(services: Services) -> list[IngestReport]:
        started = time.perf_counter()
        with RateProgress(console, f"Indexing into {name}", len(files)) as bar:
            reports = await ingest_files(
                services.ingestor,
                services.store,
                files,
                name,
                concurrency=settings.ingest_concurrency,
                force=force,
                on_done=_on_done(bar),
            )
        removed: list[RemovedFile] = []
        if folders and not unlisted:  # a folder listed in part would look emptier than it is
            removed = await prune_missing(services.ingestor, services.store, name, folders, files)
        reports = [*unlisted, *reports]  # folders that could not be listed are failures too
        render.ingest_summary(console, reports, time.perf_counter() - started)
        if folders:
            render.pruned(console, removed, skipped=bool(unlisted))
        return reports

    record = via_server(settings)
    reports = _remote(settings, record, through) if record else _run(settings, job)
    if any(r.status is IngestStatus.FAILED for r in reports):
        raise typer.Exit(1)


Weight = Annotated[
    float | None,
    typer.Option(
        "--vector-weight", min=0.0, max=1.0, help="hybrid: dense share of the fusion (default: the setting)"
    ),
]
Diversity = Annotated[
    float, typer.Option("--diversity", min=0.0, max=1.0, help="MMR: 0 keeps the ranking, higher: variety")
]
PerFile = Annotated[int | None, typer.Option("--max-per-file", min=1, max=100, help="at most n hits a file")]
Languages = Annotated[
    list[str] | None,
    typer.Option("--language", "-l", help="only chunks in this language (ISO 639-1; repeatable)"),
]
Rerank = Annotated[
    str | None,
    typer.Option("--rerank", help="a configured reranker's name, or none (default: the default one)"),
]
Floor = Annotated[
    float | None, typer.Option("--min-score", min=0.0, max=1.0, help="drop hits below this relevance")
]
FilterText = Annotated[
    str | None,
    typer.Option(
        "--filter",
        help="a filter expression as JSON, e.g. "
        '\'{"must": [{"key": "tags", "match": {"value": "invoice"}}]}\' (docs/knowledge-bases.md#filters)',
    ),
]


def _where(text: str | None) -> MetaFilter | None:
    """``--filter``'s expression; a bad one exits 2 with INVALID_FILTER, like any RagError."""
    try:
        return parse_filter_json(text, "--filter")
    except InvalidFilter as exc:
        err_console.print(f"[red]error[/red] {exc.code}: {exc}")
        raise typer.Exit(2) from exc


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="what to look for")],
    collection: Annotated[list[str] | None, typer.Option("--collection", "-c", help="repeatable")] = None,
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="number of results")] = 5,
    mode: Annotated[str, typer.Option("--mode", "-m", help="dense, sparse or hybrid")] = "hybrid",
    vector_weight: Weight = None,
    diversity: Diversity = 0.0,
    max_per_file: PerFile = None,
    language: Languages = None,
    rerank: Rerank = None,
    min_score: Floor = None,
    filter_text: FilterText = None,
    explain: Annotated[bool, typer.Option("--explain", help="show dense/sparse/fused scores")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    data_dir: DataDir = None,
) -> None:
    """Search indexed documents (the same pipeline as POST /search: reranker and agent included)."""
    settings = load_settings(data_dir)
    try:
        parsed = SearchMode.parse(mode)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--mode") from exc
    names = tuple(collection or [settings.default_collection])
    knobs = SearchKnobs(
        min_score=settings.retrieval.min_score if min_score is None else min_score,
        vector_weight=vector_weight,
        diversity=diversity,
        max_per_file=max_per_file,
        languages=tuple(dict.fromkeys(code.lower() for code in language or ())),
        rerank=None if rerank is None else rerank.lower(),
        where=_where(filter_text),
    )

    async def job(services: Services) -> list[Hit]:
        request = PipelineRequest(collections=names, queries=(query,), k=k, mode=parsed, knobs=knobs)
        return list((await services.pipeline.run(request)).hits)

    async def through(remote: RemoteIndex) -> list[Hit]:
        raw = json.loads(filter_text) if knobs.where is not None and filter_text else None
        return await remote.search(query, names, k=k, mode=parsed, knobs=knobs, filter_json=raw)

    record = via_server(settings)
    hits = _remote(settings, record, through) if record else _run(settings, job)
    if as_json:
        sys.stdout.write(render.hits_json(hits) + "\n")
    else:
        render.hits(console, query, hits, explain=explain)


@app.command("mcp")
def mcp_stdio(data_dir: DataDir = None) -> None:
    """Serve the Model Context Protocol on stdin/stdout for agents (Claude Desktop, IDEs): search,
    list_collections, read_document, add_text and add_url over this index (docs/mcp.md).

    Nothing but protocol is written to stdout; logs go to stderr."""
    from ragd.mcp.server import serve_stdio

    settings = load_settings(data_dir)
    _configure_logging(settings, quiet=True)
    run_or_exit(lambda: serve_stdio(lambda: open_services(settings)))


@app.command("eval")
def evaluate(
    datasets: Annotated[
        list[Path] | None, typer.Argument(help="BEIR folders (corpus.jsonl, queries.jsonl, qrels/)")
    ] = None,
    mode: Annotated[list[str] | None, typer.Option("--mode", "-m", help="repeatable; default: all")] = None,
    max_queries: Annotated[int | None, typer.Option("--max-queries", min=1)] = None,
    sample_docs: Annotated[
        int | None,
        typer.Option(
            "--sample-docs",
            min=1,
            help="a fixed sample of the corpus: every judged document, then others up to N",
        ),
    ] = None,
    split: Annotated[
        str, typer.Option("--split", help="qrels split: test, or train/dev to tune on")
    ] = "test",
    vector_weight: Weight = None,
    diversity: Diversity = 0.0,
    max_per_file: PerFile = None,
    rerank: Rerank = None,
    filter_text: FilterText = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output on stdout")] = False,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="index folder (default: DATA_DIR/eval)")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option("--dataset", "-d", help="run this dataset's evaluation set (name or id) instead"),
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=100, help="--dataset: hits judged per query")] = 10,
    compare: Annotated[
        bool, typer.Option("--compare", help="--dataset: also run the current settings; wins/losses")
    ] = False,
    import_path: Annotated[
        Path | None,
        typer.Option("--import", help="--dataset: first add the labels in a JSONL file/BEIR folder"),
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", help="--dataset: through this ragd server", envvar="RAGD_URL")
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", help="--dataset: its API key", envvar="RAGD_API_KEY")
    ] = None,
) -> None:
    """Index BEIR datasets and report nDCG@10, recall@100, MRR@10 and latency per mode; or, with
    --dataset, run a dataset's evaluation set (docs/knowledge-bases.md, "Evaluation sets").

    Queries run through the search pipeline (the configured reranker included), with BEIR's
    conventions: a hit on the query's own document is ignored."""
    if dataset is not None:
        knobs = SearchKnobs(
            vector_weight=vector_weight,
            diversity=diversity,
            max_per_file=max_per_file,
            rerank=None if rerank is None else rerank.lower(),
        )
        try:
            parsed = SearchMode.parse((mode or ["hybrid"])[0])
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--mode") from exc
        request = DatasetEval(dataset, parsed, k, knobs, compare, import_path)
        _dataset_eval(load_settings(data_dir), request, url, key, as_json=as_json)
        return
    if not datasets:
        raise typer.BadParameter("give BEIR folders, or --dataset", param_hint="DATASETS")
    base = Settings()
    settings = base.model_copy(update={"data_dir": data_dir or base.data_dir / "eval"})
    try:
        modes = [SearchMode.parse(m) for m in (mode or [m.value for m in SearchMode])]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--mode") from exc
    knobs = SearchKnobs(
        vector_weight=vector_weight,
        diversity=diversity,
        max_per_file=max_per_file,
        rerank=None if rerank is None else rerank.lower(),
        where=_where(filter_text),
    )
    shown = err_console if as_json else console  # stdout stays JSON

    async def job(services: Services) -> None:
        report = []
        for folder in datasets:
            data = load_dataset(folder, split=split, max_queries=max_queries, sample_docs=sample_docs)
            with RateProgress(shown, f"Indexing {data.name}", len(data.corpus), unit="docs") as bar:
                async with services.store.bulk():
                    indexed = await index_dataset(
                        services.ingestor, data, tick=lambda n: bar.advance(steps=n)
                    )
            await services.store.optimize()
            results = []
            for m in modes:
                with RateProgress(shown, f"{data.name} {m.value}", len(data.queries), unit="queries") as bar:
                    results.append(
                        await evaluate_mode(
                            services.pipeline, data, m, knobs=knobs, tick=lambda n: bar.advance(steps=n)
                        )
                    )
            if as_json:
                report.append(render.eval_json(data.name, indexed, results))
            else:
                render.eval_table(console, data.name, indexed, results)
        if as_json:
            sys.stdout.write(json.dumps({"knobs": dataclasses.asdict(knobs), "datasets": report}) + "\n")

    _run(settings, job)


def _dataset_eval(
    settings: Settings, request: DatasetEval, url: str | None, key: str | None, *, as_json: bool
) -> None:
    """``ragd eval --dataset``: through ``url`` or the server holding the index, else embedded."""
    record = None if url else via_server(settings)
    remote = bool(url or record)
    bar = evalset_cli.Bar(err_console if as_json else console, "queries" if remote else "searches")
    try:
        if remote:
            secret = settings.server.api_key
            key = key if url else (secret.get_secret_value() if secret else None)
            target = url or (record.url if record else "")
            _configure_logging(settings, quiet=True)
            out = run_or_exit(lambda: evalset_cli.run_remote(target, key, request, bar))
        else:
            out = _run(settings, lambda services: evalset_cli.run_embedded(services, request, bar))
    finally:
        bar.close()
    evalset_cli.render(console, out, as_json=as_json)


@app.command()
def stats(data_dir: DataDir = None) -> None:
    """Collections, files and chunks in the index, and its manifest."""
    settings = load_settings(data_dir)

    async def job(services: Services) -> tuple[IndexManifest, Inventory]:
        return services.manifest, await inventory(services.store)

    record = via_server(settings)
    manifest, held = _remote(settings, record, RemoteIndex.stats) if record else _run(settings, job)
    render.stats(console, manifest, dict(held.chunks), dict(held.files), held.total)


@app.command("rm")
def remove(
    target: Annotated[
        str | None,
        typer.Argument(metavar="FILE_ID_OR_PATH", help="a file id, or the path it was ingested from"),
    ] = None,
    collection: Collection = None,
    everything: Annotated[bool, typer.Option("--all", help="remove the whole collection")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="--all without asking")] = False,
    data_dir: DataDir = None,
) -> None:
    """Remove a file from a collection, or a whole collection (--all -c NAME)."""
    if everything == (target is not None):
        raise typer.BadParameter("give FILE_ID_OR_PATH, or --all to remove a whole collection")
    if everything and collection is None:
        raise typer.BadParameter("--all removes the collection named with --collection", param_hint="-c")
    settings = load_settings(data_dir)
    name = collection or settings.default_collection
    if everything and not yes:
        typer.confirm(f"Remove every file of collection {name!r}?", abort=True)

    async def job(services: Services) -> None:
        await _refuse_dataset_collection(services, name)
        if target is None:
            render.removed_collection(console, await remove_collection(services.store, name))
        else:
            gone = await remove_file(services.ingestor, services.store, name, target)
            render.removed_files(console, [gone], name)

    _run(settings, job)


async def _refuse_dataset_collection(services: Services, name: str) -> None:
    """A knowledge-base dataset's collection is the dataset API's: its catalog would go stale."""
    found = re.fullmatch(r"kb-([0-9a-f]{32})", name)
    if found is None or services.kb is None:
        return
    dataset = await services.kb.catalog.get_dataset(str(uuid.UUID(found.group(1))))
    if dataset is not None:
        raise Conflict(
            f"collection {name!r} is knowledge-base dataset {dataset.name!r}",
            hint=f"remove its files or the dataset through /api/v1/datasets/{dataset.id}",
        )


DEMO_QUESTION = "How do I run a hybrid search from the command line?"


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="bind address (default: RAGD_SERVER__HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default: RAGD_SERVER__PORT, 8000)")] = None,
    data_dir: DataDir = None,
) -> None:
    """Run the HTTP service: POST /search, the /api/v1 ingestion API, MCP at /mcp, health and metrics."""
    from ragd.api.app import create_app

    settings = _bound(load_settings(data_dir), host, port)
    _require_port(settings.server.host, settings.server.port, "serve")
    _configure_logging(settings)
    _serve_app(create_app(settings), settings)


def _bound(settings: Settings, host: str | None, port: int | None) -> Settings:
    """``settings`` with the address given; refuses a non-loopback address without an API key."""
    server = settings.server.model_copy(
        update={k: v for k, v in {"host": host, "port": port}.items() if v is not None}
    )
    if server.api_key is None and server.host not in LOOPBACK:
        err_console.print(
            f"[red]error[/red] CONFIGURATION_ERROR: refusing to serve on {server.host} without an API key "
            "(set RAGD_SERVER__API_KEY to 32+ characters, e.g. openssl rand -hex 32)"
        )
        raise typer.Exit(2)
    return settings.model_copy(update={"server": server})


def _can_listen(host: str, port: int) -> bool:
    """Whether ``host:port`` is free to listen on (checked first, to say so plainly when it is not)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _require_port(host: str, port: int, command: str = "serve") -> str:
    """``host`` as it is shown in a URL; exit 2 with ADDRESS_IN_USE when ``host:port`` is taken,
    saying how ``ragd <command>`` takes another port."""
    shown = f"[{host}]" if ":" in host else host
    if not _can_listen(host, port):
        err_console.print(
            f"[red]error[/red] ADDRESS_IN_USE: {escape(shown)}:{port} is taken by another process "
            f"(another ragd?): stop it, or choose another port: {escape(_another_port(host, port, command))}",
            highlight=False,
        )
        raise typer.Exit(2)
    return shown


def _another_port(host: str, port: int, command: str) -> str:
    """How ``ragd <command>`` (serve, proxy, demo) takes another port: a free one, by its
    ``--port`` or by ``RAGD_SERVER__PORT``."""
    free = next((p for p in range(port + 1, min(port + 100, 65536)) if _can_listen(host, p)), port + 1)
    if command == "demo":
        return (
            f"ragd demo --serve --port {free}, or RAGD_SERVER__PORT={free} ragd demo --serve "
            f"(from a checkout: python3 dev.py demo --port {free})"
        )
    if command == "proxy":
        return f"add --port {free} to ragd proxy, or set RAGD_SERVER__PORT={free}"
    return f"ragd {command} --port {free}, or RAGD_SERVER__PORT={free} ragd {command}"


def _record(settings: Settings, url: str) -> None:
    try:
        write_record(settings.data_dir, url)
    except OSError as exc:  # the CLI then says STORE_LOCKED, as before: not worth stopping for
        logging.getLogger("ragd.api").warning("cannot record the server address in the data dir: %s", exc)


def _serve_app(api: Any, settings: Settings) -> None:
    """Serve ``api`` (a ragd FastAPI app) until stopped; exit 2 when its services failed to start."""
    import uvicorn

    from ragd.api.slow_clients import server_config
    from ragd.bootstrap.heap import freeze_startup_heap

    server = settings.server
    if server.api_key is None:
        logging.getLogger("ragd.api").warning("no API key set: the API is open to anyone on this machine")
    shown = _require_port(server.host, server.port)
    if server.ui_enabled and api.state.ragd.settings.server.ui_enabled:
        logging.getLogger("ragd.api").info("web UI: http://%s:%d/ui/", shown, server.port)
    runner = uvicorn.Server(server_config(api, server, log_config=None))  # with slow-client bounds
    state = api.state.ragd
    state.on_fatal = lambda _exc: setattr(runner, "should_exit", True)  # stop serving: nothing can work
    # once the index is open, say where this server listens, for the CLI (ragd.cli.held), and take
    # the start-up heap out of the garbage collector's scans (ragd.bootstrap.heap)

    def ready() -> None:
        _record(settings, server_url(server.host, server.port))
        freeze_startup_heap()

    state.on_ready = ready
    state.on_stopping = lambda: remove_record(settings.data_dir)
    try:
        runner.run()
    finally:
        remove_record(settings.data_dir)
    if state.startup_error is not None:
        error = state.startup_error
        code = error.code if isinstance(error, RagError) else type(error).__name__
        err_console.print(f"[red]error[/red] {code}: ragd failed to start: {escape(str(error))}")
        raise typer.Exit(2)


@app.command()
def proxy(
    docs_folder: Annotated[
        Path, typer.Option("--docs-folder", help="the folder to index, keep in sync and answer from")
    ],
    upstream: Annotated[
        str | None,
        typer.Option(help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (RAGD_LLM__BASE_URL)"),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="the upstream model that writes search queries (RAGD_LLM__MODEL)"),
    ] = None,
    collection: Annotated[
        str | None, typer.Option("--collection", "-c", help="collection (default: the folder's name)")
    ] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help=".gitignore-style pattern")] = None,
    host: Annotated[str | None, typer.Option(help="bind address (default: RAGD_SERVER__HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default: RAGD_SERVER__PORT, 8000)")] = None,
    data_dir: DataDir = None,
) -> None:
    """Index a folder, keep it in sync, and serve the OpenAI-compatible chat proxy over it.

    Every chat model answers from the folder; GET /files, POST /reindex and GET /health report on
    it; every other path goes to the upstream unchanged."""
    from ragd.api.proxy_app import create_proxy_app, proxy_settings
    from ragd.bootstrap.proxy import FolderProxy

    if not docs_folder.is_dir():
        err_console.print(f"[red]error[/red] NOT_FOUND: no such folder: {escape(str(docs_folder))}")
        raise typer.Exit(2)
    settings = _bound(load_settings(data_dir), host, port)
    url = upstream or settings.llm.base_url
    if not url:
        raise typer.BadParameter("give the upstream (or set RAGD_LLM__BASE_URL)", param_hint="--upstream")
    name = collection or re.sub(r"[^A-Za-z0-9_-]", "-", docs_folder.resolve().name)[:128] or "docs"
    try:
        settings = proxy_settings(settings, upstream=url, collection=name, model=model)
    except ValidationError as exc:
        message = f"{name!r} is not a collection name: 1-128 of A-Z a-z 0-9 _ -"
        raise typer.BadParameter(message, param_hint="--collection") from exc
    _require_port(settings.server.host, settings.server.port, "proxy")
    _configure_logging(settings)
    folder = FolderProxy(folder=docs_folder, collection=name, ignore=tuple(ignore or ()))
    _serve_app(create_proxy_app(settings, folder), settings)


@app.command()
def demo(
    question: Annotated[str, typer.Argument(help="what to ask the demo corpus")] = DEMO_QUESTION,
    data_dir: DataDir = None,
    serve_ui: Annotated[
        bool,
        typer.Option(
            "--serve/--no-serve",
            help="then serve the web UI on loopback, with the docs as a dataset of a 'demo' tenant",
        ),
    ] = False,
    host: Annotated[
        str | None, typer.Option(help="--serve: bind address (default: RAGD_SERVER__HOST)")
    ] = None,
    port: Annotated[int | None, typer.Option(help="--serve: port (default: RAGD_SERVER__PORT, 8000)")] = None,
) -> None:
    """Index ragd's own documentation into the dataset "ragd docs" (tenant "demo") and answer a
    search about it; with --serve, then serve the web UI over the same index."""
    from ragd.cli.demo import index_docs

    docs = Path(__file__).resolve().parents[3] / "docs"
    readme = docs.parent / "README.md"
    if not docs.is_dir():
        err_console.print("[red]error[/red] NOT_FOUND: the demo corpus (the repository's docs/) is not here")
        raise typer.Exit(2)
    if not serve_ui and (host is not None or port is not None):
        raise typer.BadParameter("--host and --port say where to serve: give --serve too")
    settings = load_settings(data_dir)
    shown = ""
    if serve_ui:  # say so before minutes of indexing, not after
        settings = _bound(settings, host, port)
        shown = _require_port(settings.server.host, settings.server.port, "demo")
    # the docs' text; not the UI screenshots under docs/ui/ (pictures of the demo itself)
    found = collect([docs, readme] if readme.is_file() else [docs])
    files = [f.path for f in found if f.path.suffix == ".md"]

    async def job(services: Services) -> None:
        collection = await index_docs(services, files, console)
        request = PipelineRequest(collections=(collection,), queries=(question,), k=3)
        hits = list((await services.pipeline.run(request)).hits)
        console.print()
        render.hits(console, question, hits, explain=True)

    _run(settings, job)
    if serve_ui:
        from ragd.api.app import create_app

        url = f"http://{shown}:{settings.server.port}/ui/"
        console.print(f"\n[bold]Open {url}[/bold] (the web UI; Ctrl+C stops the server)")
        _configure_logging(settings)
        _serve_app(create_app(settings), settings)


app.add_typer(tenants_app, name="tenants")
app.add_typer(keys_app, name="keys")
app.add_typer(grants_app, name="grants")
app.add_typer(jobs_app, name="jobs")
app.add_typer(sources_app, name="sources")
app.command("audit")(audit_command)
app.command("export")(export_command)
app.command("import")(import_command)
app.command("backup")(backup_command)
app.command("restore")(restore_command)
app.command("migrate")(migrate_command)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

"""How results look in a terminal (the only place ragd prints)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragd.evaluation.runner import IndexResult, ModeResult
from ragd.ingest.removal import RemovedCollection, RemovedFile
from ragd.types import ChunkMeta, Hit, IndexManifest, IngestReport, IngestStatus

SNIPPET = 320


def _where(hit: Hit) -> str:
    meta = ChunkMeta.parse(hit.meta)
    parts = [meta.source or meta.name or hit.id]
    if meta.page is not None:
        parts.append(f"page {meta.page + 1}")
    if meta.headers_breadcrumb:
        parts.append(meta.headers_breadcrumb)
    return " · ".join(parts)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def hits(console: Console, query: str, results: Sequence[Hit], *, explain: bool = False) -> None:
    if not results:
        console.print(f"No results for [bold]{escape(query)}[/bold].")
        return
    console.print(f"[bold]{len(results)}[/bold] results for [bold]{escape(query)}[/bold]\n")
    for i, hit in enumerate(results, 1):
        console.print(
            f"[bold cyan]{i}.[/bold cyan] [green]{escape(_where(hit))}[/green]  score {hit.score:.3f}"
        )
        if explain:
            s = hit.scores
            console.print(
                f"   dense {_fmt(s.dense)} · sparse {_fmt(s.sparse)} · fused {_fmt(s.fused)}", style="dim"
            )
        text = " ".join(hit.content.split())
        snippet = text if len(text) <= SNIPPET else text[:SNIPPET].rsplit(" ", 1)[0] + " …"
        console.print(f"   {escape(snippet)}\n")


def hits_json(results: Sequence[Hit]) -> str:
    return json.dumps(
        [
            {
                "id": h.id,
                "score": h.score,
                "scores": {"dense": h.scores.dense, "sparse": h.scores.sparse, "fused": h.scores.fused},
                "content": h.content,
                "meta": dict(h.meta),
            }
            for h in results
        ],
        ensure_ascii=False,
        indent=2,
    )


def ingest_summary(console: Console, reports: Sequence[IngestReport], seconds: float) -> None:
    counts = {s: sum(r.status is s for r in reports) for s in IngestStatus}
    chunks = sum(r.chunks for r in reports if r.status is IngestStatus.INDEXED)
    console.print(
        f"\n[bold]{counts[IngestStatus.INDEXED]}[/bold] indexed ({chunks} chunks), "
        f"{counts[IngestStatus.UNCHANGED]} unchanged, "
        f"[{'red' if counts[IngestStatus.FAILED] else 'green'}]{counts[IngestStatus.FAILED]} failed[/] "
        f"in {seconds:.1f} s"
    )
    failed = [r for r in reports if r.status is IngestStatus.FAILED]
    if not failed:
        return
    table = Table(title="Failed files", title_justify="left")
    table.add_column("file", overflow="fold")
    table.add_column("code", style="red")
    table.add_column("reason", overflow="fold")
    for r in failed:
        table.add_row(escape(r.source), r.code or "", escape(r.message or ""))
    console.print(table)


def pruned(console: Console, removed: Sequence[RemovedFile], *, skipped: bool) -> None:
    """What ``ragd ingest`` removed because the folder no longer has it (or why it removed nothing)."""
    if skipped:
        console.print(
            "[yellow]0 removed[/yellow]: a folder could not be listed, so no file was taken for deleted"
        )
        return
    console.print(f"[bold]{len(removed)}[/bold] removed (no longer in the folder)")
    for file in removed:
        console.print(f"  - {escape(file.source)} ({_chunks(file.chunks)})", highlight=False)


def not_pruned(console: Console, url: str) -> None:
    """``ragd ingest`` went through a server: files gone from the folder stay until a local ingest."""
    console.print(
        f"[yellow]0 removed[/yellow]: through the server at {escape(url)} files gone from the folder "
        "are not removed (run the ingest again with the server stopped)",
        highlight=False,
    )


def _chunks(n: int) -> str:
    return f"{n} chunk" if n == 1 else f"{n} chunks"


def removed_files(console: Console, removed: Sequence[RemovedFile], collection: str) -> None:
    for file in removed:
        console.print(
            f"Removed [green]{escape(file.source)}[/green] ({_chunks(file.chunks)}, file id {file.file_id})"
            f" from [bold]{escape(collection)}[/bold]",
            highlight=False,
        )


def removed_collection(console: Console, removed: RemovedCollection) -> None:
    console.print(
        f"Removed collection [bold]{escape(removed.name)}[/bold]: {removed.files} files, "
        f"{_chunks(removed.chunks)}",
        highlight=False,
    )


def eval_json(name: str, index: IndexResult, results: Sequence[ModeResult]) -> dict[str, object]:
    """One dataset's figures for ``ragd eval --json``."""
    return {
        "dataset": name,
        "documents": index.documents,
        "chunks": index.chunks,
        "empty_documents": index.empty,
        "index_seconds": round(index.seconds, 3),
        "modes": [
            {
                "mode": r.mode.value,
                "ndcg_at_10": round(r.ndcg_at_10, 6),
                "recall_at_100": round(r.recall_at_100, 6),
                "mrr_at_10": round(r.mrr_at_10, 6),
                "p50_ms": round(r.p50_ms, 3),
                "p95_ms": round(r.p95_ms, 3),
                "queries": r.queries,
            }
            for r in results
        ],
    }


def eval_table(console: Console, name: str, index: IndexResult, results: Sequence[ModeResult]) -> None:
    console.print(
        f"\n[bold]{escape(name)}[/bold]: {index.documents} documents, {index.chunks} chunks indexed "
        f"in {index.seconds:.1f} s" + (f" ({index.empty} empty documents skipped)" if index.empty else "")
    )
    table = Table()
    for col in ("mode", "nDCG@10", "recall@100", "MRR@10", "p50 ms", "p95 ms", "queries"):
        table.add_column(col, justify="right" if col != "mode" else "left")
    for r in results:
        table.add_row(
            r.mode.value,
            f"{r.ndcg_at_10:.4f}",
            f"{r.recall_at_100:.4f}",
            f"{r.mrr_at_10:.4f}",
            f"{r.p50_ms:.1f}",
            f"{r.p95_ms:.1f}",
            str(r.queries),
        )
    console.print(table)


def stats(
    console: Console, manifest: IndexManifest, collections: dict[str, int], files: dict[str, int], total: int
) -> None:
    table = Table(title="Collections", title_justify="left")
    table.add_column("collection")
    table.add_column("files", justify="right")
    table.add_column("chunks", justify="right")
    for name, chunks in sorted(collections.items()):
        table.add_row(escape(name), str(files.get(name, 0)), str(chunks))
    console.print(table)
    console.print(f"[bold]{total}[/bold] chunks in total")
    info = Table(title="Index manifest", title_justify="left", show_header=False)
    for field in manifest.__dataclass_fields__:
        info.add_row(field, escape(repr(getattr(manifest, field))))
    console.print(info)

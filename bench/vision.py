"""Vision extraction: answers found in pictures, text extractor alone vs ``auto`` with a vision model.

    python bench/vision.py [--corpus DIR] [--with FOLDER ...] [--k 5] [--keep DIR] [--no-timing]

Writes the corpus of ``bench/vision_docs`` (14 diagram and figure documents: Word-shape flowcharts,
pictures in .docx, PDFs with chart/table/diagram images, picture slides, scans; 40 questions whose
answers are only in the pictures) unless ``--corpus`` names a folder holding it, then:

1. **Answers in the top k**: indexes the corpus into fresh data dirs, once with
   ``RAGD_EXTRACT__ENGINE=kreuzberg`` (the text extractor alone: what ragd did before) and once with
   ``auto`` against a scripted multimodal endpoint on loopback (``tests/support/vision_endpoint.py``:
   OpenAI chat completions with ``image_url`` parts, whose "model" is Tesseract reading the picture it
   receives; for the diagram profiles its answer is a Mermaid graph of the lines it read, so the
   labels are in it).  Every question is asked in process (the pipeline of ``ragd search``, hybrid);
   it counts when a top-k hit from its file contains its answer (``bench/shared_qa.py``'s rule).
   Reported per engine and document kind (top k and top 1), and per document with the engine
   ``auto`` chose and the engines its chunks name.  ``--with FOLDER`` indexes more files beside the
   corpus in every run, without questions, so the pictures' chunks compete with real documents.
2. **Cache**: the ``auto`` ingest is run again into another fresh data dir sharing the first one's
   vision cache (a re-index): the calls it makes (none when every answer comes from the cache), its
   chunks and its answers.
3. **Seconds per page** of each engine (``--no-timing`` skips it): every file read in this process by
   the text extractor, ``auto``, ``vision-llm`` and (``.docx`` only) ``hybrid-diagram``, each with an empty
   cache; pages are PDF pages, and for Office files the pages LibreOffice makes of them.  Medians
   over files, the share of the time the "model" (Tesseract in the endpoint) took, and the seconds
   per page without it (what ragd adds: rendering, encoding, LibreOffice).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pypdfium2  # noqa: E402
from bench.vision_docs import KINDS, write_corpus  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.table import Table  # noqa: E402
from tests.support.vision_endpoint import VisionCall, VisionEndpoint, ocr_rule  # noqa: E402

from ragd.bootstrap import open_services  # noqa: E402
from ragd.cli.progress import RateProgress  # noqa: E402
from ragd.extract.router import build_extractor  # noqa: E402
from ragd.ingest.batch import ingest_files  # noqa: E402
from ragd.ingest.sources import collect  # noqa: E402
from ragd.retrieve.pipeline import PipelineRequest  # noqa: E402
from ragd.settings import ExtractSettings, Settings, VisionSettings  # noqa: E402
from ragd.store.base import VectorStore  # noqa: E402
from ragd.types import Blob, IngestReport, PointFilter  # noqa: E402
from ragd.vision.kit import build_vision  # noqa: E402
from shared_qa import NOT_DOCUMENTS as SHARED_ANSWER_KEYS  # noqa: E402
from shared_qa import answered  # noqa: E402

console = Console(width=None if sys.stdout.isatty() else 160)
COLLECTION = "vision"
NOT_DOCUMENTS = ("questions.jsonl", *SHARED_ANSWER_KEYS)  # answer keys and source lists, not documents
MODEL = "scripted-vl"
DIAGRAM_PROFILES = ("diagram", "diagram-topology")


class ScriptedModel:
    """The endpoint, answering with Tesseract's reading of each picture; counts its own seconds."""

    def __init__(self) -> None:
        self.endpoint = VisionEndpoint()
        self.seconds = 0.0
        self._lock = threading.Lock()
        self.endpoint.rule(self.read)

    def read(self, call: VisionCall) -> str:
        started = time.perf_counter()
        text = ocr_rule(call) or ""
        with self._lock:
            self.seconds += time.perf_counter() - started
        if call.profile not in DIAGRAM_PROFILES:
            return text
        lines = [line.strip().replace('"', "'") for line in text.splitlines() if line.strip()]
        # Tesseract sees no arrows: a graph of the lines it read, without edges, then the lines
        nodes = "\n".join(f'  n{i}["{line}"]' for i, line in enumerate(lines, 1))
        return f"```mermaid\nflowchart TD\n{nodes}\n```\n\nThe diagram's boxes: {'; '.join(lines)}."

    @property
    def calls(self) -> int:
        return len(self.endpoint.calls)

    def __enter__(self) -> ScriptedModel:
        self.endpoint.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.endpoint.close()


def settings_for(data_dir: Path, engine: str, model: ScriptedModel | None, cache: Path | None) -> Settings:
    vision = VisionSettings()
    if model is not None:
        vision = VisionSettings(api_base_url=model.endpoint.url, model=MODEL, cache_dir=cache)
    return Settings(data_dir=data_dir, extract=ExtractSettings(engine=engine), vision=vision)  # type: ignore[arg-type]


async def index_and_ask(
    settings: Settings, folders: list[Path], questions: list[dict[str, str]], k: int, label: str
) -> tuple[list[IngestReport], list[int | None], dict[str, str]]:
    """Ingest the folders (``ragd ingest``'s code path), then ask every question: the reports, each
    question's rank (None: not in the top k) and each file's chunk engines (:func:`chunk_engines`)."""
    files = collect(folders, NOT_DOCUMENTS)
    async with open_services(settings) as services:
        with RateProgress(console, f"Indexing ({label})", len(files)) as bar:

            def done(report: IngestReport) -> None:
                bar.advance(chunks=report.chunks, failed=report.code is not None)

            reports = await ingest_files(services.ingestor, services.store, files, COLLECTION, on_done=done)
        engines = await chunk_engines(services.store)
        ranks: list[int | None] = []
        with _progress() as progress:
            task = progress.add_task(f"Asking ({label})", total=len(questions))
            for item in questions:
                request = PipelineRequest(collections=(COLLECTION,), queries=(item["question"],), k=k)
                hits = (await services.pipeline.run(request)).hits
                rows = [{"content": h.content, "meta": dict(h.meta)} for h in hits]
                ranks.append(answered(rows, item))
                progress.advance(task)
    for report in reports:
        if report.code is not None:
            console.print(f"[red]failed[/red] {report.source}: {report.code} {report.message}")
    return reports, ranks, engines


async def chunk_engines(store: VectorStore) -> dict[str, str]:
    """Per file: the engines (and prompt profiles) its stored chunks name, with their counts."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    offset: str | None = None
    while True:
        page, offset = await store.scroll(PointFilter(), limit=256, offset=offset)
        for chunk in page:
            meta = chunk.meta
            engine = str(meta.get("extractor") or "?")
            if meta.get("vision_profile"):
                engine += f"/{meta['vision_profile']}"
            seen[Path(str(meta.get("source") or meta.get("name") or "")).name][engine] += 1
        if offset is None:
            break
    return {name: ", ".join(f"{e} x{n}" for e, n in sorted(c.items())) for name, c in seen.items()}


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console,
    )  # fmt: skip


def office_pages(corpus: Path, work: Path) -> dict[str, int]:
    """Pages of every file: a PDF's own, an Office file's once LibreOffice has made a PDF of it."""
    pages: dict[str, int] = {}
    office = sorted(p for p in corpus.iterdir() if p.suffix in (".docx", ".pptx"))
    if office and shutil.which("soffice"):
        profile = (work / "soffice-profile").as_uri()
        subprocess.run(
            ["soffice", f"-env:UserInstallation={profile}", "--headless", "--convert-to", "pdf",
             "--outdir", str(work / "pages"), *map(str, office)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    for path in sorted(corpus.iterdir()):
        pdf = path if path.suffix == ".pdf" else work / "pages" / f"{path.stem}.pdf"
        if pdf.exists():
            document = pypdfium2.PdfDocument(pdf)
            pages[path.name] = len(document)
            document.close()
    return pages


def time_engines(
    corpus: Path, work: Path, pages: dict[str, int]
) -> dict[str, list[tuple[str, float, float]]]:
    """Per engine: (file, seconds, model seconds) of one in-process read of every file it reads."""
    plan = {
        "kreuzberg": sorted(pages),
        "auto": sorted(pages),
        "vision-llm": sorted(pages),
        "hybrid-diagram": sorted(name for name in pages if name.endswith(".docx")),
    }
    timings: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    with ScriptedModel() as model, _progress() as progress:
        for engine, names in plan.items():
            settings = settings_for(work / f"t-{engine}", engine, model, work / f"cache-{engine}")
            kit = build_vision(settings.extract, settings.vision)
            extractor = build_extractor(settings.extract, vision=kit)
            task = progress.add_task(f"Timing {engine}", total=len(names))
            for name in names:
                before = model.seconds
                started = time.perf_counter()
                extractor.extract(Blob(name=name, data=(corpus / name).read_bytes()))
                timings[engine].append((name, time.perf_counter() - started, model.seconds - before))
                progress.advance(task)
            if kit is not None:
                kit.close()
    return timings


def share(ranks: list[int | None], k: int | None = None) -> str:
    """Questions answered within rank ``k`` (None: within the top k searched)."""
    found = sum(rank is not None and (k is None or rank <= k) for rank in ranks)
    return f"{found}/{len(ranks)} = {found / max(1, len(ranks)):.1%}"


def report_answers(
    questions: list[dict[str, str]], text: list[int | None], auto: list[int | None], k: int
) -> None:
    table = Table(title=f"Questions answered in the top {k}")
    table.add_column("documents")
    table.add_column("questions", justify="right")
    table.add_column("text extractor alone", justify="right")
    table.add_column("auto + vision endpoint", justify="right")
    table.add_column("text alone, top 1", justify="right")
    table.add_column("auto, top 1", justify="right")
    groups = [(kind, [i for i, item in enumerate(questions) if item["kind"] == kind]) for kind in KINDS]
    for name, rows in [*groups, ("[bold]all", list(range(len(questions))))]:
        t, a = [text[i] for i in rows], [auto[i] for i in rows]
        table.add_row(name, str(len(rows)), share(t), share(a), share(t, 1), share(a, 1))
    console.print(table)


def report_documents(
    questions: list[dict[str, str]], text: list[int | None], auto: list[int | None],
    text_reports: list[IngestReport], auto_reports: list[IngestReport], engines: dict[str, str],
) -> None:  # fmt: skip
    table = Table(title="Per document")
    columns = ("file", "kind", "auto: the file's engine", "auto: its chunks' engines", "chunks text / auto")
    for column in (*columns, "found text / auto"):
        table.add_column(column)
    by_name = {Path(r.source).name: r for r in text_reports}
    for report in auto_reports:
        name = Path(report.source).name
        rows = [i for i, item in enumerate(questions) if item["file"] == name]
        kind = questions[rows[0]]["kind"] if rows else ""
        by_text, by_auto = (sum(ranks[i] is not None for i in rows) for ranks in (text, auto))
        found = f"{by_text} / {by_auto} (of {len(rows)})"
        chunks = f"{by_name[name].chunks if name in by_name else '-'} / {report.chunks}"
        table.add_row(name, kind, report.extractor or report.code or "", engines.get(name, ""), chunks, found)
    console.print(table)
    for item, t, a in zip(questions, text, auto, strict=True):
        where = f"{item['file']}: {item['question']} ({item['answer_substring']!r})"
        if a is None:
            console.print(f"  auto missed (text alone: {t or 'missed'}): {where}")
        elif a > 1 or (t is not None and a > t):
            console.print(f"  auto found at rank {a} (text alone: {t or 'missed'}): {where}")


def report_timings(timings: dict[str, list[tuple[str, float, float]]], pages: dict[str, int]) -> None:
    table = Table(title="Seconds per page (one read of each file in this process, empty cache)")
    columns = ("engine", "files", "pages", "median s/page", "all files: s/page", "model's share",
               "median s/page without the model")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right")
    for engine, rows in timings.items():
        per_page = [seconds / pages[name] for name, seconds, _ in rows]
        own = [(seconds - model) / pages[name] for name, seconds, model in rows]
        total = sum(seconds for _, seconds, _ in rows)
        model = sum(m for _, _, m in rows)
        count = sum(pages[name] for name, _, _ in rows)
        table.add_row(
            engine, str(len(rows)), str(count), f"{statistics.median(per_page):.3f}",
            f"{total / count:.3f}", f"{model / total:.0%}" if total else "-", f"{statistics.median(own):.3f}",
        )  # fmt: skip
    console.print(table)


@contextmanager
def workspace(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="ragd-vision-") as folder:
        yield Path(folder)


async def run(args: argparse.Namespace, work: Path) -> None:
    corpus = args.corpus or work / "corpus"
    if args.corpus is None:
        write_corpus(corpus)
    questions = [json.loads(line) for line in (corpus / "questions.jsonl").read_text().splitlines() if line]
    folders = [corpus, *args.extra]
    files = sorted(p.name for p in corpus.iterdir() if p.name != "questions.jsonl")
    console.print(f"corpus: {corpus} ({len(files)} files, {len(questions)} questions); work: {work}")
    if args.extra:
        console.print(f"indexed beside it, without questions: {', '.join(map(str, args.extra))}")
    text_reports, text, _ = await index_and_ask(
        settings_for(work / "text", "kreuzberg", None, None), folders, questions, args.k, "text extractor"
    )
    with ScriptedModel() as model:
        cache = work / "vision-cache"
        auto_reports, auto, engines = await index_and_ask(
            settings_for(work / "auto", "auto", model, cache), folders, questions, args.k, "auto"
        )
        first_calls, model_seconds = model.calls, model.seconds
        profiles = Counter(call.profile for call in model.endpoint.calls)
        cached = sum(1 for _ in cache.rglob("*.json"))
        again_reports, again, _ = await index_and_ask(
            settings_for(work / "auto-again", "auto", model, cache), folders, questions, args.k, "re-index"
        )
        second_calls = model.calls - first_calls
    ours = set(files)
    text_ours, auto_ours = (
        [r for r in rs if Path(r.source).name in ours] for rs in (text_reports, auto_reports)
    )
    report_answers(questions, text, auto, args.k)
    report_documents(questions, text, auto, text_ours, auto_ours, engines)
    chunks = [sum(r.chunks for r in reports) for reports in (auto_reports, again_reports)]
    console.print(
        f"vision calls: {first_calls} on the first auto ingest ({dict(profiles)}; the model's Tesseract "
        f"{model_seconds:.1f} s), {cached} answers cached.\nRe-index into a fresh data dir with that cache: "
        f"{second_calls} calls, {chunks[1]} chunks (first: {chunks[0]}), answers in the top {args.k}: "
        f"{share(again)} (first: {share(auto)})"
    )
    if args.timing:
        pages = office_pages(corpus, work)
        report_timings(time_engines(corpus, work, pages), pages)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, help="a folder written by python -m bench.vision_docs")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument(
        "--with", dest="extra", type=Path, action="append", default=[],
        help="a folder indexed beside the corpus in every run, without questions (distractors, e.g. "
        "../shared/documents); repeatable",
    )  # fmt: skip
    parser.add_argument("--keep", type=Path, help="work here (data dirs, cache, corpus) and keep it")
    parser.add_argument("--no-timing", dest="timing", action="store_false", help="skip seconds per page")
    args = parser.parse_args()
    if shutil.which("tesseract") is None:
        sys.exit("the scripted model reads pictures with Tesseract: install tesseract-ocr")
    with workspace(args.keep) as work:
        asyncio.run(run(args, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Export a dataset on one live instance, import it on another (issue 32 §2).

Two real services (uvicorn on loopback, the local model, embedded Qdrant Edge, the job worker), each
with its own data dir: the exporter on a SQLite catalog, the importer on PostgreSQL.  The imported
dataset answers the same queries with the same hits while the importer's embedders are never called;
a tampered, truncated, traversing, linking, over-size or over-quota archive is refused with nothing
written; another tenant's dataset cannot be exported; a model that differs is INDEX_MISMATCH, or
indexed again from the stored uploads on request.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragd.api.app import create_app
from ragd.cli.app import app as cli
from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.embed.local_onnx import OnnxDenseEmbedder
from ragd.settings import CatalogSettings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.slow

TOPICS = ["volcanoes", "beekeeping", "sourdough", "lighthouses", "coral reefs", "origami"]
QUERIES = ["how do volcanoes erupt", "keeping bees in winter", "sourdough starter", "folding paper cranes"]
ARCHIVE_LIMIT = 2 << 20


def note(i: int, topic: str) -> bytes:
    lines = [f"# Note {i} on {topic}", ""]
    lines += [f"Paragraph {j} of note {i} explains {topic} in some detail, part {j}." for j in range(60)]
    return "\n\n".join(lines).encode()


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, postgres_server: PostgresServer
) -> Iterator[tuple[LiveServer, LiveServer]]:
    root = tmp_path_factory.mktemp("archive")
    url = postgres_server.create_database()
    catalog = CatalogSettings(url=url, max_archive_bytes=ARCHIVE_LIMIT)
    second = kb_settings(root / "two", model_cache, None).model_copy(update={"catalog": catalog})
    try:
        # one after the other: alembic's migration context is process-wide, two at once trip over it
        with LiveServer(create_app(kb_settings(root / "one", model_cache, None))) as one:
            one.wait_ready()
            with LiveServer(create_app(second)) as two:
                two.wait_ready()
                yield one, two
    finally:
        postgres_server.drop_database(url)


OPEN: list[Api] = []


@pytest.fixture(scope="module", autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def client(url: str, key: str = SERVICE_KEY) -> Api:
    OPEN.append(Api(url, key))
    return OPEN[-1]


def tenant(service: Api, name: str) -> tuple[str, Api]:
    tenant_id, keys = new_tenant(service, name, "admin")
    OPEN.append(keys["admin"])
    return tenant_id, keys["admin"]


@pytest.fixture(scope="module")
def exported(servers: tuple[LiveServer, LiveServer]) -> dict[str, Any]:
    """Tenant A's dataset on the first instance: its id, its hits for QUERIES, its archive."""
    one, _ = servers
    service = client(one.url)
    _, api = tenant(service, "exporter")
    _, other = tenant(service, "other")
    dataset = api.ok("POST", "/api/v1/datasets", 201, json={"name": "notes", "description": "six notes"})
    files = [("files", (f"note-{i}.md", note(i, t), "text/markdown")) for i, t in enumerate(TOPICS)]
    job = api.ok("POST", f"/api/v1/datasets/{dataset['id']}/files", 202, files=files)["job"]
    assert api.wait_job(job["id"])["status"] == "succeeded"
    hits = {q: api.search(q, dataset["id"]) for q in QUERIES}
    archive = api.get(f"/api/v1/datasets/{dataset['id']}/export")
    assert archive.status_code == 200, archive.text
    return {"id": dataset["id"], "hits": hits, "archive": archive.content, "api": api, "other": other}


@pytest.fixture(scope="module")
def importer(servers: tuple[LiveServer, LiveServer]) -> Api:
    _, two = servers
    return tenant(client(two.url), "importer")[1]


def post_archive(api: Api, data: bytes, **params: Any) -> Any:
    return api.post(
        "/api/v1/datasets/import", params=params, files={"archive": ("ds.tar", data, "application/x-tar")}
    )


def view(hits: list[dict[str, Any]]) -> list[tuple[str, str, int, float]]:
    return [(h["content"], h["name"], h["split_id"], round(h["score"], 4)) for h in hits]


def members(data: bytes) -> dict[str, tuple[int, bytes]]:
    """Each member's name: (offset of its data in the tar, its data)."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        out = {}
        for info in tar:
            source = tar.extractfile(info)
            assert source is not None
            out[info.name] = (info.offset_data, source.read())
        return out


def rebuilt(data: bytes, change: Callable[[str, bytes], bytes]) -> bytes:
    """The archive with every member passed through ``change`` (sizes follow)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, (_, original) in members(data).items():
            body = change(name, original)
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


def dataset_names(api: Api) -> list[str]:
    return sorted(d["name"] for d in api.ok("GET", "/api/v1/datasets")["datasets"])


def stored_uploads(server: LiveServer) -> set[Path]:
    root = server.app.state.ragd.settings.files_dir
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def test_the_archive_holds_every_part_with_its_checksum(exported: dict[str, Any]) -> None:
    parts = members(exported["archive"])
    names = list(parts)
    assert names[0] == "files.jsonl"
    assert names[-1] == "manifest.json"
    head = json.loads(parts["manifest.json"][1])
    assert head["format"] == "ragd-dataset/1"
    assert head["dataset"]["name"] == "notes"
    assert head["model"]["dim"] == 384
    assert head["model"]["model"]
    assert head["files"] == len(TOPICS)
    assert head["points"] > len(TOPICS)
    assert {p["path"] for p in head["parts"]} == set(names) - {"manifest.json"}
    assert sum(1 for n in names if n.startswith("uploads/")) == len(TOPICS)
    point = json.loads(parts["points-00001.jsonl"][1].splitlines()[0])
    assert point["dense"]
    assert point["sparse"]["indices"]


def test_another_tenant_cannot_export_the_dataset(exported: dict[str, Any]) -> None:
    r = exported["other"].get(f"/api/v1/datasets/{exported['id']}/export")
    assert r.status_code == 404
    assert r.json()["detail"]["code"] == "NOT_FOUND"


def test_an_import_gives_the_same_hits_without_embedding(
    servers: tuple[LiveServer, LiveServer],
    exported: dict[str, Any],
    importer: Api,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    def counted(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append(f"{cls.__name__}.{name}")
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    for cls, name in [
        (OnnxDenseEmbedder, "embed_documents"),
        (OnnxDenseEmbedder, "embed_query"),
        (OnnxDenseEmbedder, "embed_query_now"),
        (Bm25SparseEmbedder, "embed_documents"),
        (Bm25SparseEmbedder, "embed_query"),
    ]:
        counted(cls, name)
    r = post_archive(importer, exported["archive"])
    monkeypatch.undo()
    assert r.status_code == 201, r.text
    assert calls == []
    made = r.json()
    assert made["files"] == len(TOPICS)
    assert made["points"] > 0
    assert made["job"] is None
    new_id = made["dataset"]["id"]
    assert new_id != exported["id"]
    assert made["dataset"]["name"] == "notes"
    assert made["dataset"]["description"] == "six notes"
    for query, hits in exported["hits"].items():
        assert view(importer.search(query, new_id)) == view(hits), query
    files = importer.ok("GET", f"/api/v1/datasets/{new_id}/files")["files"]
    assert sorted(f["name"] for f in files) == sorted(f"note-{i}.md" for i in range(len(TOPICS)))
    assert {f["status"] for f in files} == {"indexed"}
    exporter = exported["api"].ok("GET", f"/api/v1/datasets/{exported['id']}/files")["files"]
    assert sorted((f["name"], f["chunks"], f["size"]) for f in files) == sorted(
        (f["name"], f["chunks"], f["size"]) for f in exporter
    )
    # the stored uploads came along: a re-index reads them (and embeds, now)
    job = importer.ok("POST", f"/api/v1/datasets/{new_id}/reindex", 202)["job"]
    assert importer.wait_job(job["id"])["status"] == "succeeded"
    assert view(importer.search(QUERIES[0], new_id)) == view(exported["hits"][QUERIES[0]])
    # the same name again is a conflict; another name is a second copy
    again = post_archive(importer, exported["archive"])
    assert again.status_code == 409
    assert again.json()["detail"]["code"] == "CONFLICT"
    assert post_archive(importer, exported["archive"], name="notes copy").status_code == 201
    assert {"notes", "notes copy"} <= set(dataset_names(importer))


def test_both_are_in_the_audit_trail(
    servers: tuple[LiveServer, LiveServer], exported: dict[str, Any], importer: Api
) -> None:
    one, two = servers
    made = post_archive(importer, exported["archive"], name="audited").json()["dataset"]
    for server, action, target in (
        (one, "dataset.export", exported["id"]),
        (two, "dataset.import", made["id"]),
    ):
        records = client(server.url).ok("GET", "/api/v1/audit", params={"action": action})["records"]
        assert any(r["outcome"] == "ok" and r["target_id"] == target for r in records), records


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda d: d[: len(d) // 2], id="truncated"),
        pytest.param(lambda d: d[:-2048], id="no-manifest"),
        pytest.param("flip", id="tampered-points"),
        pytest.param("upload", id="tampered-upload"),
        pytest.param(
            lambda d: rebuilt(d, lambda n, b: b if n != "manifest.json" else b"{}"), id="not-a-manifest"
        ),
        pytest.param(lambda _: b"not a tar at all" * 100, id="garbage"),
    ],
)
def test_a_spoilt_archive_is_refused_with_nothing_written(
    servers: tuple[LiveServer, LiveServer], exported: dict[str, Any], importer: Api, spoil: Any
) -> None:
    data = bytearray(exported["archive"])
    if spoil in ("flip", "upload"):
        prefix = "points-" if spoil == "flip" else "uploads/"
        offset, _ = next(v for k, v in members(exported["archive"]).items() if k.startswith(prefix))
        data[offset + 10] ^= 0x01
        bad = bytes(data)
    else:
        bad = spoil(bytes(data))
    before, uploads = dataset_names(importer), stored_uploads(servers[1])
    r = post_archive(importer, bad, name="spoilt")
    assert (r.status_code, r.json()["detail"]["code"]) == (422, "ARCHIVE_INVALID"), r.text
    assert dataset_names(importer) == before
    assert stored_uploads(servers[1]) == uploads


def unsafe_tar(add: Callable[[tarfile.TarFile], None]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        add(tar)
    return out.getvalue()


def _member(name: str, body: bytes = b"x") -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))

    return add


def _link(name: str, kind: bytes) -> Callable[[tarfile.TarFile], None]:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, "/etc/passwd"
        tar.addfile(info)

    return add


@pytest.mark.parametrize(
    "add",
    [
        pytest.param(_member("../../escaped.txt"), id="dot-dot"),
        pytest.param(_member("/tmp/ragd-absolute.txt"), id="absolute"),
        pytest.param(_member("uploads/../../x"), id="inner-dot-dot"),
        pytest.param(_link("files.jsonl", tarfile.SYMTYPE), id="symlink"),
        pytest.param(_link("files.jsonl", tarfile.LNKTYPE), id="hardlink"),
    ],
)
def test_an_unsafe_member_is_refused(
    servers: tuple[LiveServer, LiveServer], importer: Api, add: Callable[[tarfile.TarFile], None]
) -> None:
    before = dataset_names(importer)
    r = post_archive(importer, unsafe_tar(add))
    assert (r.status_code, r.json()["detail"]["code"]) == (422, "ARCHIVE_INVALID"), r.text
    assert dataset_names(importer) == before
    assert not Path("/tmp/ragd-absolute.txt").exists()


def test_an_over_size_archive_is_refused(importer: Api) -> None:
    r = post_archive(importer, unsafe_tar(_member("files.jsonl", b"\n" * (ARCHIVE_LIMIT + 1))))
    assert (r.status_code, r.json()["detail"]["code"]) == (413, "FILE_TOO_LARGE"), r.text


def test_an_import_over_the_tenants_quota_writes_nothing(
    servers: tuple[LiveServer, LiveServer], exported: dict[str, Any]
) -> None:
    service = client(servers[1].url)
    small, admin = tenant(service, "small")
    service.ok("PUT", f"/api/v1/tenants/{small}/limits", json={"max_chunks": 3})
    uploads = stored_uploads(servers[1])
    r = post_archive(admin, exported["archive"])
    assert (r.status_code, r.json()["detail"]["code"]) == (413, "QUOTA_EXCEEDED"), r.text
    assert dataset_names(admin) == []
    assert stored_uploads(servers[1]) == uploads


def test_the_service_key_names_the_tenant(
    servers: tuple[LiveServer, LiveServer], exported: dict[str, Any]
) -> None:
    service = client(servers[1].url)
    r = post_archive(service, exported["archive"])
    assert r.status_code == 400
    assert "tenant_id" in r.text
    chosen, admin = tenant(service, "chosen")
    made = post_archive(service, exported["archive"], tenant_id=chosen).json()
    assert made["dataset"]["tenant_id"] == chosen
    assert dataset_names(admin) == ["notes"]


def test_another_model_is_index_mismatch_or_embedded_again(exported: dict[str, Any], importer: Api) -> None:
    def other_model(name: str, body: bytes) -> bytes:
        if name != "manifest.json":
            return body
        head = json.loads(body)
        head["model"]["model"] = "someone/else-384"
        return json.dumps(head).encode()

    data = rebuilt(exported["archive"], other_model)
    r = post_archive(importer, data, name="elsewhere")
    assert (r.status_code, r.json()["detail"]["code"]) == (409, "INDEX_MISMATCH"), r.text
    assert "someone/else-384" in r.json()["detail"]["error"]
    made = post_archive(importer, data, name="elsewhere", reembed="true")
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["points"] == 0
    assert body["job"] is not None
    assert importer.wait_job(body["job"]["id"])["status"] == "succeeded"
    hits = importer.search(QUERIES[0], body["dataset"]["id"])
    assert view(hits)[:1] == view(exported["hits"][QUERIES[0]])[:1]


def test_int8_vectors_are_not_fp32_ones_and_an_older_archive_is_fp32(
    exported: dict[str, Any], importer: Api
) -> None:
    def precision(value: str | None) -> Callable[[str, bytes], bytes]:
        def edit(name: str, body: bytes) -> bytes:
            if name != "manifest.json":
                return body
            head = json.loads(body)
            assert head["model"]["precision"] == "fp32"  # the exporter wrote its own
            if value is None:
                del head["model"]["precision"]  # as ragd wrote archives before precision existed
            else:
                head["model"]["precision"] = value
            return json.dumps(head).encode()

        return edit

    r = post_archive(importer, rebuilt(exported["archive"], precision("int8")), name="quantised")
    assert (r.status_code, r.json()["detail"]["code"]) == (409, "INDEX_MISMATCH"), r.text
    assert "int8" in r.json()["detail"]["error"]
    older = post_archive(importer, rebuilt(exported["archive"], precision(None)), name="older")
    assert older.status_code == 201, older.text
    assert older.json()["points"] > 0  # its vectors were taken, nothing embedded again


def test_file_metadata_moves_with_the_dataset(servers: tuple[LiveServer, LiveServer], importer: Api) -> None:
    """Tags and typed fields survive the move: the records, the types (a date stays a date: a date
    range finds it) and the filters on the new instance."""
    one, _ = servers
    _, api = tenant(client(one.url), "tagged")
    dataset = api.ok("POST", "/api/v1/datasets", 201, json={"name": "tagged"})
    files = [("files", (f"note-{i}.md", note(i, t), "text/markdown")) for i, t in enumerate(TOPICS[:2])]
    job = api.ok("POST", f"/api/v1/datasets/{dataset['id']}/files", 202, files=files)["job"]
    assert api.wait_job(job["id"])["status"] == "succeeded"
    first = sorted(
        api.ok("GET", f"/api/v1/datasets/{dataset['id']}/files")["files"], key=lambda f: f["name"]
    )[0]
    given = {"tags": ["alpha"], "fields": {"due": "2026-03-01", "pages": 12}}
    api.ok("PATCH", f"/api/v1/datasets/{dataset['id']}/files/{first['id']}", json=given)
    archive = api.get(f"/api/v1/datasets/{dataset['id']}/export")
    assert archive.status_code == 200, archive.text

    made = post_archive(importer, archive.content, name="tagged-copy")
    assert made.status_code == 201, made.text
    copy = made.json()["dataset"]["id"]
    moved = {f["name"]: f for f in importer.ok("GET", f"/api/v1/datasets/{copy}/files")["files"]}
    assert moved[first["name"]]["tags"] == ["alpha"]
    assert moved[first["name"]]["fields"]["pages"] == 12
    assert moved[first["name"]]["fields"]["due"].startswith("2026-03-01")
    assert [f["tags"] for n, f in sorted(moved.items()) if n != first["name"]] == [[]]
    date_range = {"must": [{"key": "fields.due", "range": {"gte": "2026-02-01", "lt": "2026-04-01"}}]}
    found = importer.ok(
        "POST", f"/api/v1/datasets/{copy}/search", json={"query": TOPICS[0], "k": 5, "filter": date_range}
    )
    assert {h["name"] for h in found["results"]} == {first["name"]}


def test_ragd_export_and_import_go_through_the_servers(
    servers: tuple[LiveServer, LiveServer], exported: dict[str, Any], tmp_path: Path
) -> None:
    one, two = servers
    dest = tmp_path / "notes.tar"
    runner = CliRunner()
    key = exported["api"].key
    done = runner.invoke(cli, ["export", exported["id"], str(dest), "--url", one.url, "--key", key])
    assert done.exit_code == 0, done.output
    assert members(dest.read_bytes()).keys() == members(exported["archive"]).keys()
    service = client(two.url)
    chosen, admin = tenant(service, "by cli")
    args = [
        "import",
        str(dest),
        "--tenant",
        chosen,
        "--name",
        "via cli",
        "--url",
        two.url,
        "--key",
        SERVICE_KEY,
    ]
    done = runner.invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert dataset_names(admin) == ["via cli"]
    (dataset,) = admin.ok("GET", "/api/v1/datasets")["datasets"]
    assert view(admin.search(QUERIES[1], dataset["id"])) == view(exported["hits"][QUERIES[1]])
    (tmp_path / "bad.tar").write_bytes(b"not a tar" * 100)
    done = runner.invoke(cli, ["import", str(tmp_path / "bad.tar"), "--url", two.url, "--key", admin.key])
    assert done.exit_code == 2
    assert "ARCHIVE_INVALID" in done.output


def test_counts_and_sizes_are_what_the_archive_holds_not_what_it_says(
    exported: dict[str, Any], importer: Api
) -> None:
    rewritten: dict[str, bytes] = {}

    def lying(name: str, body: bytes) -> bytes:
        """files.jsonl says 0 chunks and 1 byte a file, and the manifest its new checksum."""
        if name == "files.jsonl":
            rows = [json.loads(line) for line in body.splitlines()]
            rewritten[name] = b"".join(
                json.dumps({**r, "chunks": 0, "size": 1}).encode() + b"\n" for r in rows
            )
            return rewritten[name]
        if name == "manifest.json":
            head = json.loads(body)
            new = rewritten["files.jsonl"]
            for part in head["parts"]:
                if part["path"] == "files.jsonl":
                    part.update(bytes=len(new), sha256=hashlib.sha256(new).hexdigest())
            head["points"] = 1
            return json.dumps(head).encode()
        return body

    made = post_archive(importer, rebuilt(exported["archive"], lying), name="lying").json()
    files = importer.ok("GET", f"/api/v1/datasets/{made['dataset']['id']}/files")["files"]
    exporter = exported["api"].ok("GET", f"/api/v1/datasets/{exported['id']}/files")["files"]
    assert sorted((f["name"], f["chunks"], f["size"]) for f in files) == sorted(
        (f["name"], f["chunks"], f["size"]) for f in exporter
    )
    assert sum(f["chunks"] for f in files) == made["points"]

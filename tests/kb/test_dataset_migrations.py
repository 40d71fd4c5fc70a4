"""A live dataset moves to another model or chunking with no downtime (issue 31 §1), on SQLite and
PostgreSQL, over HTTP against a real server with its worker.

The second models are OpenAI-compatible endpoints on loopback (the real wire format): ``words``
embeds a text as its hashed bag of words (good at these word-overlap questions), ``noise`` as a
vector drawn from the text's hash (deliberately worse: unrelated to meaning).  Throughout every
migration a search loop of at least 5 requests/s sees no error and never an empty result for a
query that had hits.  The dataset's evaluation set (24 labelled queries) runs on both versions
before each switch: the worse model is held back.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from ragd.api.app import create_app
from ragd.settings import EmbeddingSettings, MigrationSettings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.kb.test_dataset_models import DIM, words_vector
from tests.support.live_server import LiveServer
from tests.support.postgres import PostgresServer
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

pytestmark = pytest.mark.slow

#: how long a version a dataset stopped serving is kept (the tests roll back well within it)
RETAIN_S = 6.0
#: each live server's stored uploads, by its URL
FILES_DIRS: dict[str, Path] = {}

TOPICS = [
    ("harbor", "The harbor crane lifts forty containers every hour."),
    ("orchard", "The orchard grows eleven kinds of heritage apples."),
    ("glacier", "The glacier retreats nine meters each summer."),
    ("bakery", "The bakery ferments its sourdough for thirty hours."),
    ("observatory", "The observatory telescope has a six meter mirror."),
    ("vineyard", "The vineyard harvests grapes by hand in October."),
    ("lighthouse", "The lighthouse lamp turns twice per minute."),
    ("library", "The library lends rare maps only on Tuesdays."),
    ("railway", "The railway tunnel is twelve kilometers long."),
    ("apiary", "The apiary keeps sixty hives on the hillside."),
    ("foundry", "The foundry casts bronze bells for churches."),
    ("aquarium", "The aquarium feeds its sharks at noon."),
    ("quarry", "The quarry supplies granite for the new bridge."),
    ("greenhouse", "The greenhouse keeps orchids at twenty degrees."),
    ("brewery", "The brewery ages its stout in oak barrels."),
    ("stadium", "The stadium roof closes in eight minutes."),
    ("monastery", "The monastery copies manuscripts by candlelight."),
    ("windmill", "The windmill grinds rye flour on windy days."),
    ("dairy", "The dairy makes cheese from goat milk."),
    ("shipyard", "The shipyard launches one ferry every spring."),
    ("museum", "The museum restores paintings in its basement."),
    ("airfield", "The airfield runway is lit by solar lamps."),
    ("pottery", "The pottery fires its kiln once a week."),
    ("tannery", "The tannery dyes leather with walnut husks."),
]


def document(topic: str, fact: str) -> bytes:
    filler = " ".join(f"Note {n} about the {topic} schedule and its staff rota." for n in range(12))
    return f"# The {topic}\n\n{fact}\n\n{filler}\n".encode()


def question(topic: str, fact: str) -> str:
    return f"what does the {topic} do? {fact.split(' ', 3)[-1].rstrip('.')}"


def noise_vector(text: str) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).normal(size=DIM)
    return (vector / np.linalg.norm(vector)).tolist()  # type: ignore[no-any-return]


def embeddings_reply(request: RecordedRequest) -> Reply:
    body = request.json
    make = noise_vector if body["model"] == "noise-64" else words_vector
    data = [{"object": "embedding", "index": i, "embedding": make(t)} for i, t in enumerate(body["input"])]
    return Reply.json({"object": "list", "model": body["model"], "data": data, "usage": {"total_tokens": 1}})


def model(upstream: ScriptedServer, name: str) -> EmbeddingSettings:
    return EmbeddingSettings(  # type: ignore[call-arg]
        provider="openai", base_url=f"{upstream.url}/v1", model=name, dimension=DIM, retries=0
    )


def embedded(upstream: ScriptedServer) -> list[str]:
    return [t for r in upstream.requests_to("POST", "/v1/embeddings") for t in r.json["input"]]


class SearchLoop:
    """Searches the dataset at a fixed rate (``rate`` a second, each search on one of ``lanes``
    threads of its own, so a slow answer does not hold back the next); counts errors and empties."""

    def __init__(
        self, api: Api, dataset_id: str, queries: list[str], rate: float = 10.0, lanes: int = 4
    ) -> None:
        self.api, self.dataset_id, self.queries = api, dataset_id, queries
        self.interval_s, self.lanes = 1.0 / rate, lanes
        self.sent = 0
        #: (when the answer came, the length of each hit's text)
        self.answers: list[tuple[float, list[int]]] = []
        self.errors: list[str] = []
        self.empty: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(lane,), daemon=True) for lane in range(lanes)
        ]

    def __enter__(self) -> SearchLoop:
        self.started = time.monotonic()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self.seconds = time.monotonic() - self.started

    def _run(self, lane: int) -> None:
        """Lane ``lane`` sends the searches due at ``started + (lane + n * lanes) * interval``."""
        path = f"/api/v1/datasets/{self.dataset_id}/search"
        headers = {"Authorization": f"Bearer {self.api.key}"}
        with httpx.Client(base_url=self.api.url, headers=headers, timeout=60) as http:
            n = 0
            while not self._stop.is_set():
                due = self.started + (lane + n * self.lanes) * self.interval_s
                if self._stop.wait(max(0.0, due - time.monotonic())):
                    return
                query = self.queries[(lane + n * self.lanes) % len(self.queries)]
                n += 1
                with self._lock:
                    self.sent += 1
                self._one(http, path, query)

    def _one(self, http: httpx.Client, path: str, query: str) -> None:
        try:
            r = http.post(path, json={"query": query, "k": 3})
        except Exception as exc:
            with self._lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        with self._lock:
            if r.status_code != 200:
                self.errors.append(f"{r.status_code} {r.text[:200]}")
            elif not r.json()["results"]:
                self.empty.append(query)
            else:
                self.answers.append((time.monotonic(), [len(h["content"]) for h in r.json()["results"]]))

    def check(self) -> None:
        assert self.errors == []
        assert self.empty == []
        assert self.sent / self.seconds >= 5.0, f"{self.sent} searches in {self.seconds:.1f} s"


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.on("POST", "/v1/embeddings", embeddings_reply)
        yield server


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    model_cache: Path,
    upstream: ScriptedServer,
) -> Iterator[LiveServer]:
    url = None
    pg: PostgresServer | None = None
    if request.param == "postgres":
        pg = request.getfixturevalue("postgres_server")
        url = pg.create_database()
    data_dir = tmp_path_factory.mktemp("migrations") / "data"
    settings = kb_settings(
        data_dir,
        model_cache,
        url,
        embedders={"words": model(upstream, "words-64"), "noise": model(upstream, "noise-64")},
        migrations=MigrationSettings(settle_s=0.6, retain_s=RETAIN_S),
    )
    try:
        with LiveServer(create_app(settings)) as live:
            live.wait_ready()
            FILES_DIRS[live.url] = settings.files_dir
            yield live
    finally:
        if pg is not None and url is not None:
            pg.drop_database(url)


@pytest.fixture(scope="module")
def keys(server: LiveServer) -> Iterator[dict[str, Api]]:
    service = Api(server.url, SERVICE_KEY)
    _, keys = new_tenant(service, "movers", "admin", "editor")
    yield keys
    for api in (*keys.values(), service):
        api.close()


@pytest.fixture(scope="module")
def admin(keys: dict[str, Api]) -> Api:
    return keys["admin"]


@pytest.fixture(scope="module")
def dataset(admin: Api) -> dict[str, Any]:
    """24 files, one fact each, and an evaluation set of one question per file."""
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "facts"})
    files = [("files", (f"{topic}.md", document(topic, fact))) for topic, fact in TOPICS]
    sent = admin.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=files)
    assert admin.wait_job(sent["job"]["id"])["status"] == "succeeded"
    listed = admin.ok("GET", f"/api/v1/datasets/{ds['id']}/files", params={"limit": 100})["files"]
    ids = {f["name"]: f["id"] for f in listed}
    labels = [{"query": question(t, f), "files": [ids[f"{t}.md"]]} for t, f in TOPICS]
    admin.ok("POST", f"/api/v1/datasets/{ds['id']}/evalset", 201, json={"queries": labels})
    ds["file_ids"] = ids
    return ds


def queries() -> list[str]:
    return [question(t, f) for t, f in TOPICS]


def migrate(admin: Api, ds: dict[str, Any], **body: Any) -> dict[str, Any]:
    return admin.ok("POST", f"/api/v1/datasets/{ds['id']}/migrations", 202, json=body)  # type: ignore[no-any-return]


def wait_state(
    admin: Api, ds: dict[str, Any], mid: str, *states: str, timeout_s: float = 180
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = admin.ok("GET", f"/api/v1/datasets/{ds['id']}/migrations/{mid}")
        if got["state"] in states:
            return got  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"migration {mid} never reached {states}: {got}")


def hits(admin: Api, ds: dict[str, Any], query: str) -> list[dict[str, Any]]:
    return admin.search(query, ds["id"], k=3)


def test_a_model_migration_serves_the_old_version_throughout_then_switches_and_rolls_back(
    admin: Api, dataset: dict[str, Any], upstream: ScriptedServer
) -> None:
    probe = queries()[3]
    assert hits(admin, dataset, probe)
    with SearchLoop(admin, dataset["id"], queries()) as loop:
        started = migrate(admin, dataset, embedding="words", max_regression=1.0)
        assert started["state"] == "building"
        assert started["target"]["embedding"] == "words"
        assert started["job"]["kind"] == "migrate"
        switched = wait_state(admin, dataset, started["id"], "switched", "ready", "failed")
        time.sleep(0.5)  # a few searches on the new version too
    loop.check()
    assert switched["state"] == "switched", (switched["held"], switched["message"], switched["job"])
    assert switched["reports"]["queries"] == len(TOPICS)
    assert {"ndcg_at_10", "recall_at_k", "mrr_at_10"} <= set(switched["reports"]["new"])
    job = admin.ok("GET", f"/api/v1/jobs/{switched['job_id']}")
    assert job["status"] == "succeeded"
    assert job["done"] == len(TOPICS)

    # after the switch the dataset's queries are embedded by the new model
    seen = len(embedded(upstream))
    found = hits(admin, dataset, probe)
    assert found
    assert found[0]["name"] == f"{TOPICS[3][0]}.md"
    assert probe in embedded(upstream)[seen:]
    shown = admin.ok("GET", f"/api/v1/datasets/{dataset['id']}")
    assert shown["embedding"] == "words"

    # rollback: the old version at once, with no embedding call
    seen = len(upstream.requests_to("POST", "/v1/embeddings"))
    back = admin.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations/{switched['id']}/rollback")
    assert back["state"] == "rolled_back"
    assert back["serving"] == "source"
    assert len(upstream.requests_to("POST", "/v1/embeddings")) == seen
    assert hits(admin, dataset, probe)
    assert len(upstream.requests_to("POST", "/v1/embeddings")) == seen  # MiniLM answers again
    again = admin.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations/{switched['id']}/rollback", 409)
    assert again["detail"]["code"] == "MIGRATION_STATE"


LATE = ("planetarium", "The planetarium projects the winter sky at dusk.")


def test_a_chunking_migration_takes_files_uploaded_meanwhile_and_waits_for_a_manual_switch(
    admin: Api, dataset: dict[str, Any], upstream: ScriptedServer
) -> None:
    before = {
        f["name"]: f["chunks"] for f in admin.ok("GET", f"/api/v1/datasets/{dataset['id']}/files")["files"]
    }
    old_hit = hits(admin, dataset, queries()[0])[0]
    spec = {"strategy": "token", "size": 24, "overlap": 0}
    with SearchLoop(admin, dataset["id"], queries()) as loop:
        started = migrate(admin, dataset, chunking=spec, auto_switch=False)
        assert started["source"]["embedding"] == "default"  # the rolled back model migration left MiniLM
        busy = admin.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations", 409, json={"chunking": spec})
        assert busy["detail"]["code"] == "MIGRATION_RUNNING"
        late = admin.ok(
            "POST",
            f"/api/v1/datasets/{dataset['id']}/files",
            202,
            files=[("files", (f"{LATE[0]}.md", document(*LATE)))],
        )
        assert admin.wait_job(late["job"]["id"])["status"] == "succeeded"
        ready = wait_state(admin, dataset, started["id"], "ready", "switched", "failed")
        assert ready["state"] == "ready"
        assert ready["held"] == "manual"
        # held: the old version still answers, the new file included
        assert hits(admin, dataset, question(*LATE))[0]["name"] == f"{LATE[0]}.md"
        assert len(hits(admin, dataset, queries()[0])[0]["content"]) == len(old_hit["content"])
        switch_at = time.monotonic()
        done = admin.ok(
            "POST", f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}/switch", json={}
        )
        time.sleep(0.5)
    loop.check()
    # never a mixed list: until the switch every hit is an old, long chunk (24 tokens: < 150 chars)
    before_switch = [n for at, lengths in loop.answers if at < switch_at for n in lengths]
    assert len(before_switch) > 20
    assert min(before_switch) > 150
    assert done["state"] == "switched"
    assert done["serving"] == "target"
    # the hits carry the new chunking: shorter chunks, more of them per file; the late file is there
    new_hit = hits(admin, dataset, queries()[0])[0]
    assert new_hit["name"] == old_hit["name"]
    assert len(new_hit["content"]) < len(old_hit["content"])
    assert hits(admin, dataset, question(*LATE))[0]["name"] == f"{LATE[0]}.md"
    after = {
        f["name"]: f["chunks"] for f in admin.ok("GET", f"/api/v1/datasets/{dataset['id']}/files")["files"]
    }
    assert all(after[name] > chunks for name, chunks in before.items())
    shown = admin.ok("GET", f"/api/v1/datasets/{dataset['id']}")
    assert shown["chunking"]["size"] == 24


def test_a_worse_model_is_held_back_until_a_switch_overrides_it(
    admin: Api, dataset: dict[str, Any], upstream: ScriptedServer
) -> None:
    with SearchLoop(admin, dataset["id"], queries()) as loop:
        started = migrate(admin, dataset, embedding="noise")
        held = wait_state(admin, dataset, started["id"], "ready", "switched", "failed")
    loop.check()
    assert held["state"] == "ready", held
    assert held["held"] == "regression", held
    reports = held["reports"]
    assert reports["queries"] == len(TOPICS)
    assert reports["old"]["ndcg_at_10"] > reports["new"]["ndcg_at_10"] + 0.02
    assert reports["losses"]
    refused = admin.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}/switch", 409)
    assert refused["detail"]["code"] == "MIGRATION_HELD"
    assert admin.ok("GET", f"/api/v1/datasets/{dataset['id']}")["embedding"] == "default"
    forced = admin.ok(
        "POST", f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}/switch", json={"override": True}
    )
    assert forced["state"] == "switched"
    assert admin.ok("GET", f"/api/v1/datasets/{dataset['id']}")["embedding"] == "noise"
    back = admin.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}/rollback")
    assert back["state"] == "rolled_back"
    listed = admin.ok("GET", f"/api/v1/datasets/{dataset['id']}/migrations")["migrations"]
    assert [m["state"] for m in listed][:3] == ["rolled_back", "switched", "rolled_back"]


def stored_chunks(server: LiveServer, dataset: dict[str, Any]) -> int:
    """Every chunk of the dataset's collection in the store, whatever its version."""
    service = Api(server.url, SERVICE_KEY)
    try:
        rows = service.ok("GET", "/api/v1/collections")["collections"]
    finally:
        service.close()
    return sum(r["chunks"] for r in rows if r["dataset_id"] == dataset["id"])


def served_chunks(admin: Api, dataset: dict[str, Any]) -> int:
    return sum(f["chunks"] for f in admin.ok("GET", f"/api/v1/datasets/{dataset['id']}/files")["files"])


def test_the_version_not_served_is_removed_when_its_retention_ends(
    server: LiveServer, admin: Api, dataset: dict[str, Any]
) -> None:
    latest = admin.ok("GET", f"/api/v1/datasets/{dataset['id']}/migrations")["migrations"][0]
    assert latest["state"] == "rolled_back"
    path = f"/api/v1/datasets/{dataset['id']}/migrations/{latest['id']}"
    gone = wait_state_where(admin, path, lambda m: m["removed_at"] is not None, timeout_s=RETAIN_S + 30)
    assert gone["retain_until"] <= gone["removed_at"]
    assert stored_chunks(server, dataset) == served_chunks(admin, dataset)  # one version left
    refused = admin.ok("POST", f"{path}/switch", 409, json={"override": True})
    assert refused["detail"]["code"] == "MIGRATION_STATE"


def test_a_cancelled_migration_leaves_the_served_version_alone(
    server: LiveServer, admin: Api, dataset: dict[str, Any]
) -> None:
    served = served_chunks(admin, dataset)
    started = migrate(
        admin, dataset, chunking={"strategy": "token", "size": 40, "overlap": 0}, auto_switch=False
    )
    cancelled = admin.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}/cancel")
    assert cancelled["state"] == "cancelled"
    path = f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}"
    wait_state_where(admin, path, lambda m: m["removed_at"] is not None, timeout_s=60)
    assert admin.ok("GET", f"/api/v1/datasets/{dataset['id']}")["chunking"]["size"] == 24
    assert served_chunks(admin, dataset) == served
    # its job stops or finishes; then nothing of the new version is left in the store
    wait_state_where(admin, path, lambda m: m["job"]["finished"], timeout_s=60)
    tidy = time.monotonic() + 30
    while stored_chunks(server, dataset) != served:
        assert time.monotonic() < tidy, "the cancelled version's chunks were not removed"
        time.sleep(0.2)
    assert hits(admin, dataset, queries()[5])
    again = admin.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}/cancel", 409)
    assert again["detail"]["code"] == "MIGRATION_STATE"


def wait_state_where(admin: Api, path: str, done: Any, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        got: dict[str, Any] = admin.ok("GET", path)
        if done(got):
            return got
        assert time.monotonic() < deadline, got
        time.sleep(0.2)


def test_a_file_that_fails_keeps_its_old_version_holds_the_switch_and_a_retry_finishes_it(
    server: LiveServer, admin: Api, dataset: dict[str, Any]
) -> None:
    victim = dataset["file_ids"][f"{TOPICS[7][0]}.md"]
    stored = FILES_DIRS[server.url] / dataset["id"] / victim
    kept = stored.read_bytes()
    stored.unlink()  # its new version cannot be built: NOT_FOUND for that file alone
    try:
        started = migrate(admin, dataset, chunking={"strategy": "token", "size": 64, "overlap": 0})
        held = wait_state(admin, dataset, started["id"], "ready", "switched", "failed")
    finally:
        stored.write_bytes(kept)
    assert held["state"] == "ready", held
    assert held["held"] == "failed_files"
    assert held["failed_files"] == 1
    job = admin.ok("GET", f"/api/v1/jobs/{held['job_id']}")
    assert job["status"] == "partial"
    assert [e["key"] for e in job["errors"]] == [victim]
    assert job["errors"][0]["code"] == "NOT_FOUND"
    # the old version still answers for it, and a plain switch is refused
    assert hits(admin, dataset, question(*TOPICS[7]))[0]["name"] == f"{TOPICS[7][0]}.md"
    path = f"/api/v1/datasets/{dataset['id']}/migrations/{started['id']}"
    assert admin.ok("POST", f"{path}/switch", 409, json={})["detail"]["code"] == "MIGRATION_HELD"

    retry = admin.ok("POST", f"/api/v1/jobs/{held['job_id']}/retry", 202)
    assert retry["kind"] == "migrate"
    assert retry["total"] == 1
    done = wait_state(admin, dataset, started["id"], "switched", "failed")
    assert done["state"] == "switched", done
    assert done["job_id"] == retry["id"]
    assert admin.ok("GET", f"/api/v1/datasets/{dataset['id']}")["chunking"]["size"] == 64
    assert hits(admin, dataset, question(*TOPICS[7]))[0]["name"] == f"{TOPICS[7][0]}.md"


def test_an_editor_may_not_migrate_and_other_tenants_see_nothing(
    server: LiveServer, keys: dict[str, Api], dataset: dict[str, Any]
) -> None:
    editor = keys["editor"]
    refused = editor.ok("POST", f"/api/v1/datasets/{dataset['id']}/migrations", 403, json={})
    assert refused["detail"]["code"] == "FORBIDDEN"
    assert editor.ok("GET", f"/api/v1/datasets/{dataset['id']}/migrations")["migrations"]  # readers see them
    service = Api(server.url, SERVICE_KEY)
    try:
        records = service.ok("GET", "/api/v1/audit", params={"limit": 200})["records"]
        done = {(r["action"], r["outcome"]) for r in records}
        for action in ("dataset.migrate", "migration.switch", "migration.rollback", "migration.cancel"):
            assert (action, "ok") in done, action
        assert ("dataset.migrate", "denied") in done  # the editor's attempt above
        _, others = new_tenant(service, "strangers", "admin")
        stranger = others["admin"]
        path = f"/api/v1/datasets/{dataset['id']}/migrations"
        assert stranger.post(path, json={}).status_code == 404
        assert stranger.get(path).status_code == 404
        stranger.close()
    finally:
        service.close()

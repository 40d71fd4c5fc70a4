"""Datasets' evaluation sets over HTTP (issue 31 §2), on a live server with a SQLite and a
PostgreSQL catalog: labels added (by file name or id, one or many, from the sandbox), listed,
deleted and audited; another tenant's key gets 404; the bounds; an eval run through the dataset
search whose nDCG@10 is what ragd.evaluation.metrics gives for the same ranks; a baseline's wins and
losses; ``ragd eval --dataset`` through the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragd.api.app import create_app
from ragd.cli.app import app as cli_app
from ragd.evaluation.metrics import mean, mrr_at, ndcg_at, recall_at
from ragd.settings import EvaluationSettings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.slow

MAX_QUERIES = 24
MAX_RUN = 22

#: 22 files on distinct topics, and a question each answers (by its words, so every mode finds it)
TOPICS = [
    ("volcano", "Basalt lava erupts from the volcano crater; magma chambers feed the eruption."),
    ("violin", "The violin bow is strung with horsehair and rosin makes the strings sing."),
    ("glacier", "A glacier carves moraines and fjords as the ice sheet slowly advances."),
    ("sourdough", "Sourdough bread rises with a wild yeast starter fed with flour and water."),
    ("satellite", "A geostationary satellite orbits the equator at thirty-six thousand kilometres."),
    ("beekeeping", "Beekeepers harvest honey from hives; the queen bee lays eggs in the comb."),
    ("chess", "In chess the knight moves in an L shape and castling protects the king."),
    ("tides", "Ocean tides follow the moon's gravity, with spring tides at full moon."),
    ("origami", "Origami folds a single paper square into cranes without cutting or glue."),
    ("cactus", "The saguaro cactus stores water in its pleated trunk in the Sonoran desert."),
    ("lighthouse", "The lighthouse keeper trimmed the lamp wick so the beacon warned ships."),
    ("penguin", "Emperor penguins huddle through the Antarctic winter incubating their eggs."),
    ("telescope", "A refracting telescope gathers starlight with an objective lens."),
    ("compost", "Compost heaps turn kitchen scraps into humus with worms and bacteria."),
    ("samurai", "The samurai carried a katana and followed the bushido code of honour."),
    ("coral", "Coral reefs are built by polyps; warm water bleaching kills the coral."),
    ("windmill", "A windmill grinds grain into flour as its sails turn in the breeze."),
    ("falconry", "In falconry the falconer trains a hawk to return to the leather glove."),
    ("espresso", "Espresso is brewed by forcing hot water through finely ground coffee."),
    ("tsunami", "A tsunami is a train of waves raised by an undersea earthquake."),
    ("pottery", "The potter throws clay on a wheel and fires the vase in a kiln."),
    ("aurora", "The aurora borealis glows when solar wind particles strike the atmosphere."),
]
QUESTIONS = {
    "volcano": "where does basalt lava erupt from",
    "violin": "what is a violin bow strung with",
    "glacier": "how does a glacier carve fjords",
    "sourdough": "what makes sourdough bread rise",
    "satellite": "where does a geostationary satellite orbit",
    "beekeeping": "who lays eggs in the honey comb",
    "chess": "how does the knight move in chess",
    "tides": "what do ocean tides follow",
    "origami": "how are origami cranes folded",
    "cactus": "where does the saguaro cactus store water",
    "lighthouse": "what did the lighthouse keeper trim",
    "penguin": "how do emperor penguins survive the antarctic winter",
    "telescope": "how does a refracting telescope gather starlight",
    "compost": "what turns kitchen scraps into humus",
    "samurai": "what sword did the samurai carry",
    "coral": "what builds coral reefs",
    "windmill": "what does a windmill grind",
    "falconry": "what does the falconer train a hawk to do",
    "espresso": "how is espresso brewed",
    "tsunami": "what raises a tsunami",
    "pottery": "where does the potter fire the vase",
    "aurora": "why does the aurora borealis glow",
}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[LiveServer]:
    url = None
    pg: PostgresServer | None = None
    if request.param == "postgres":
        pg = request.getfixturevalue("postgres_server")
        url = pg.create_database()
    data_dir = tmp_path_factory.mktemp("evalsets") / "data"
    evaluation = EvaluationSettings(max_queries=MAX_QUERIES, max_run_queries=MAX_RUN)
    try:
        with LiveServer(create_app(kb_settings(data_dir, model_cache, url, evaluation=evaluation))) as live:
            live.wait_ready()
            yield live
    finally:
        if pg is not None and url is not None:
            pg.drop_database(url)


@pytest.fixture(scope="module")
def world(server: LiveServer) -> Iterator[dict[str, Any]]:
    """Tenant acme (editor, reader), its dataset "topics" with the 22 files indexed, and tenant
    globex (admin)."""
    service = Api(server.url, SERVICE_KEY)
    _, acme = new_tenant(service, "acme", "editor", "reader")
    _, globex = new_tenant(service, "globex", "admin")
    editor = acme["editor"]
    ds = editor.ok("POST", "/api/v1/datasets", 201, json={"name": "topics"})
    parts = [("files", (f"{name}.txt", text.encode())) for name, text in TOPICS]
    job = editor.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts)["job"]
    assert editor.wait_job(job["id"])["status"] == "succeeded"
    files = {f["name"]: f["id"] for f in editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files")["files"]}
    yield {
        "service": service,
        "editor": editor,
        "reader": acme["reader"],
        "globex": globex["admin"],
        "ds": ds,
        "files": files,
    }
    for api in (service, *acme.values(), *globex.values()):
        api.close()


def _evalset(ds: dict[str, Any]) -> str:
    return f"/api/v1/datasets/{ds['id']}/evalset"


def _clear(world: dict[str, Any]) -> None:
    editor, path = world["editor"], _evalset(world["ds"])
    for q in editor.ok("GET", path, params={"limit": 1000})["queries"]:
        editor.ok("DELETE", f"{path}/{q['id']}")


def _label_all(world: dict[str, Any]) -> list[dict[str, Any]]:
    _clear(world)
    queries = [{"query": QUESTIONS[name], "files": [f"{name}.txt"]} for name, _ in TOPICS]
    return world["editor"].ok("POST", _evalset(world["ds"]), 201, json={"queries": queries})["queries"]  # type: ignore[no-any-return]


def test_labels_are_added_listed_paged_deleted_and_audited(world: dict[str, Any]) -> None:
    _clear(world)
    editor, reader, path, files = world["editor"], world["reader"], _evalset(world["ds"]), world["files"]
    one = editor.ok(
        "POST",
        path,
        201,
        json={
            "query": "what makes bread rise",
            "files": ["sourdough"],
            "answer": "wild yeast",
            "source": "sandbox",
        },
    )["queries"]
    assert [(q["files"], q["source"], q["answer"]) for q in one] == [
        ([files["sourdough.txt"]], "sandbox", "wild yeast")
    ]
    many = editor.ok(
        "POST",
        path,
        201,
        json={
            "source": "chat",
            "queries": [
                {"query": "knight moves", "files": [files["chess.txt"]]},
                {"query": "tides", "files": ["tides.txt"]},
            ],
        },
    )["queries"]
    assert [q["source"] for q in many] == ["chat", "chat"]
    listed = reader.ok("GET", path)  # readers list
    assert listed["total"] == 3
    assert [q["query"] for q in listed["queries"]] == ["what makes bread rise", "knight moves", "tides"]
    page = reader.ok("GET", path, params={"limit": 1, "offset": 1})
    assert [q["id"] for q in page["queries"]] == [many[0]["id"]]
    assert page["total"] == 3
    denied = reader.post(path, json={"query": "x", "files": ["tides.txt"]})
    assert denied.status_code == 403
    assert denied.json()["detail"]["code"] == "FORBIDDEN"
    assert reader.delete(f"{path}/{one[0]['id']}").status_code == 403
    editor.ok("DELETE", f"{path}/{one[0]['id']}")
    gone = editor.delete(f"{path}/{one[0]['id']}")
    assert gone.status_code == 404
    assert gone.json()["detail"]["code"] == "NOT_FOUND"
    assert editor.ok("GET", path)["total"] == 2
    actions = [
        r["action"] for r in world["service"].ok("GET", "/api/v1/audit", params={"limit": 50})["records"]
    ]
    assert "evalset.add" in actions
    assert "evalset.delete" in actions


def test_bad_labels_are_clear_422s_and_store_nothing(world: dict[str, Any]) -> None:
    _clear(world)
    editor, path = world["editor"], _evalset(world["ds"])
    for body, fragment in [
        ({"query": "no answer given"}, "files and/or chunks"),
        ({"query": "unknown file", "files": ["nope.txt"]}, "no file with the id or name 'nope.txt'"),
        (
            {"queries": [{"query": "fine", "files": ["tides.txt"]}, {"query": "bad", "files": ["x"]}]},
            "queries[1]",
        ),
    ]:
        bad = editor.post(path, json=body)
        assert bad.status_code == 422, bad.text
        assert bad.json()["detail"]["code"] == "INVALID_EVAL_QUERY"
        assert fragment in bad.json()["detail"]["error"]
    assert editor.post(path, json={"query": "x" * 2001, "files": ["tides.txt"]}).status_code == 422
    assert (
        editor.post(path, json={"query": "both", "queries": [{"query": "x", "files": ["a"]}]}).status_code
        == 422
    )
    assert editor.ok("GET", path)["total"] == 0


def test_another_tenants_key_gets_404(world: dict[str, Any]) -> None:
    labels = _label_all(world)
    globex, path = world["globex"], _evalset(world["ds"])
    for response in (
        globex.get(path),
        globex.post(path, json={"query": "x", "files": ["tides.txt"]}),
        globex.delete(f"{path}/{labels[0]['id']}"),
        globex.post(f"/api/v1/datasets/{world['ds']['id']}/eval", json={}),
    ):
        assert response.status_code == 404
        assert response.json()["detail"]["code"] == "NOT_FOUND"
    assert world["editor"].ok("GET", path)["total"] == len(TOPICS)


def _ranked_files(api: Api, dataset_id: str, query: str, k: int) -> list[str]:
    found = api.ok("POST", f"/api/v1/datasets/{dataset_id}/search", json={"query": query, "k": k})["results"]
    return list(dict.fromkeys(h["file_id"] for h in found))


def test_an_eval_run_scores_the_dataset_search_as_the_metrics_do(world: dict[str, Any]) -> None:
    labels = _label_all(world)
    reader, ds = world["reader"], world["ds"]
    out = reader.ok("POST", f"/api/v1/datasets/{ds['id']}/eval", json={"k": 10})
    assert out["total"] == out["ran"] == len(TOPICS) >= 20
    assert out["baseline"] is None
    report = out["report"]
    ndcg = []
    for label, row in zip(labels, report["queries"], strict=True):
        ranked = _ranked_files(reader, ds["id"], label["query"], 10)
        run = {f: float(len(ranked) - i) for i, f in enumerate(ranked)}
        qrels = dict.fromkeys(label["files"], 1)
        assert row["id"] == label["id"]
        assert row["rank"] == (ranked.index(label["files"][0]) + 1 if label["files"][0] in ranked else None)
        assert row["ndcg_at_10"] == pytest.approx(ndcg_at(run, qrels, 10))
        assert row["mrr_at_10"] == pytest.approx(mrr_at(run, qrels, 10))
        assert row["recall_at_k"] == pytest.approx(recall_at(run, qrels, 10))
        ndcg.append(ndcg_at(run, qrels, 10))
    assert report["ndcg_at_10"] == pytest.approx(mean(ndcg))
    assert report["ndcg_at_10"] > 0.5  # the questions share words with their files


def test_a_chunk_label_is_judged_on_chunk_ids(world: dict[str, Any]) -> None:
    _clear(world)
    editor, ds, files = world["editor"], world["ds"], world["files"]
    chunks = editor.ok("GET", f"/api/v1/datasets/{ds['id']}/files/{files['violin.txt']}/chunks")["chunks"]
    editor.ok("POST", _evalset(ds), 201, json={"query": QUESTIONS["violin"], "chunks": [chunks[0]["id"]]})
    editor.ok("POST", _evalset(ds), 201, json={"query": QUESTIONS["violin"], "chunks": ["not-a-chunk"]})
    rows = editor.ok("POST", f"/api/v1/datasets/{ds['id']}/eval", json={})["report"]["queries"]
    assert rows[0]["rank"] == 1
    assert rows[0]["ndcg_at_10"] == pytest.approx(1.0)
    assert rows[1]["rank"] is None
    assert rows[1]["ndcg_at_10"] == 0.0


def test_a_baseline_reports_both_and_each_querys_win_or_loss(world: dict[str, Any]) -> None:
    _label_all(world)
    reader, ds = world["reader"], world["ds"]
    path = f"/api/v1/datasets/{ds['id']}/eval"
    worse = reader.ok("POST", path, json={"languages": ["ja"], "baseline": {}})  # English files: no hits
    found = [q["id"] for q in worse["baseline"]["queries"] if q["rank"] is not None]
    assert found
    assert all(q["rank"] is None for q in worse["report"]["queries"])
    assert worse["losses"] == found
    assert worse["wins"] == []
    assert worse["report"]["ndcg_at_10"] == 0.0 < worse["baseline"]["ndcg_at_10"]
    better = reader.ok("POST", path, json={"baseline": {"languages": ["ja"]}})
    assert better["wins"] == found
    assert better["losses"] == []
    same = reader.ok("POST", path, json={"baseline": {}})
    assert same["wins"] == same["losses"] == []
    assert same["report"]["ndcg_at_10"] == pytest.approx(same["baseline"]["ndcg_at_10"])


def test_the_set_and_a_run_are_bounded(world: dict[str, Any]) -> None:
    _label_all(world)  # 22
    editor, ds = world["editor"], world["ds"]
    two = [{"query": QUESTIONS[n], "files": [f"{n}.txt"]} for n in ("tides", "chess")]
    editor.ok("POST", _evalset(ds), 201, json={"queries": two})  # 24: full
    full = editor.post(_evalset(ds), json={"query": "one more", "files": ["tides.txt"]})
    assert full.status_code == 409
    assert full.json()["detail"]["code"] == "EVALSET_FULL"
    assert editor.ok("GET", _evalset(ds))["total"] == MAX_QUERIES
    path = f"/api/v1/datasets/{ds['id']}/eval"
    big = editor.post(path, json={})
    assert big.status_code == 413
    assert big.json()["detail"]["code"] == "EVAL_RUN_TOO_LARGE"
    assert editor.ok("POST", path, json={"limit": MAX_RUN})["ran"] == MAX_RUN
    tail = editor.ok("POST", path, json={"offset": MAX_RUN})
    assert (tail["ran"], tail["offset"], tail["total"]) == (2, MAX_RUN, MAX_QUERIES)
    assert editor.post(path, json={"k": 0}).status_code == 422


def test_ragd_eval_dataset_through_the_server(world: dict[str, Any], tmp_path: Path) -> None:
    _clear(world)
    labels = tmp_path / "labels.jsonl"
    lines = [json.dumps({"query": QUESTIONS[n], "files": [f"{n}.txt"]}) for n, _ in TOPICS[:21]]
    labels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    editor = world["editor"]
    args = ["eval", "--dataset", "topics", "--url", editor.url, "--key", editor.key, "--compare"]
    result = CliRunner().invoke(cli_app, [*args, "--import", str(labels), "--json"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["total"] == out["ran"] == 21
    assert out["dataset_id"] == world["ds"]["id"]
    listed = editor.ok("GET", _evalset(world["ds"]), params={"limit": 100})["queries"]
    assert {q["source"] for q in listed} == {"import"}
    server = editor.ok("POST", f"/api/v1/datasets/{world['ds']['id']}/eval", json={"baseline": {}})
    assert out["report"]["ndcg_at_10"] == pytest.approx(server["report"]["ndcg_at_10"])
    assert out["baseline"]["ndcg_at_10"] == pytest.approx(server["baseline"]["ndcg_at_10"])
    table = CliRunner().invoke(cli_app, args, env={"COLUMNS": "300"})
    assert table.exit_code == 0
    assert "nDCG@10" in table.output
    assert "baseline" in table.output
    bad = CliRunner().invoke(cli_app, ["eval", "--dataset", "nope", "--url", editor.url, "--key", editor.key])
    assert bad.exit_code == 2
    assert "NOT_FOUND" in bad.output

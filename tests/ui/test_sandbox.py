"""The retrieval sandbox (#/sandbox) in a real browser against a live ragd with indexed files.

One tenant's dataset holds a few small, distinct files (one of them hostile: its text is an HTML
tag with a script handler); another tenant has a dataset of its own. The tests search as a user
would, through the form or a shared link, and read what the page shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import PHONE, shot, sign_in, wait_until
from tests.ui.test_accessibility import UNNAMED

FACT = "How often does the lighthouse keeper wind the clockwork lens?"
LIGHTHOUSE = "\n\n".join(
    [
        "# Skerryvore lighthouse",
        "The lighthouse stands on a reef twelve miles out to sea and was finished in 1844.",
        "Supplies arrive by boat once a fortnight when the swell allows a landing at the jetty.",
        "The keeper winds the clockwork lens mechanism every four hours through the night.",
        "Fog signals are sounded by a compressed air horn whenever visibility falls below two miles.",
        "Each keeper serves four weeks on the rock and then four weeks ashore with the family.",
    ]
)
BAKERY = (
    "# Sourdough\n\nThe bakery feeds its rye starter with flour and water at dawn; the loaves prove "
    "for eighteen hours in wicker baskets before they are baked in the wood-fired oven."
)
ORCHARD = (
    "# Orchard\n\nThe apple trees are pruned in February, and the cider press runs from late "
    "September until the last russet apples are picked in November."
)
HOSTILE = "# Notice\n\nThe quarantine notice for the greenhouse reads <img src=x onerror=alert(1)> verbatim."
SECRET = "# Payroll\n\nThe payroll of the lighthouse company is kept in the zinc ledger by the treasurer."


def upload(api: Api, dataset_id: str, *files: tuple[str, str]) -> None:
    parts = [("files", (name, text.encode(), "text/markdown")) for name, text in files]
    sent = api.ok("POST", f"/api/v1/datasets/{dataset_id}/files", 202, files=parts)
    assert api.wait_job(sent["job"]["id"])["status"] == "succeeded"


@pytest.fixture(scope="module")
def corpus(service_api: Api) -> Iterator[dict[str, Any]]:
    """Tenant "harbour" with the sandbox's dataset; tenant "other" with its own (a reader key)."""
    harbour_id, _ = new_tenant(service_api, "harbour")
    chunking = {"strategy": "recursive", "size": 120, "overlap": 0}
    body = {"name": "handbook", "tenant_id": harbour_id, "chunking": chunking}
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json=body)
    upload(
        service_api,
        ds["id"],
        ("lighthouse.md", LIGHTHOUSE),
        ("bakery.md", BAKERY),
        ("orchard.md", ORCHARD),
        ("notice.md", HOSTILE),
    )
    other_id, keys = new_tenant(service_api, "other", "reader")
    mine = {"name": "payroll", "tenant_id": other_id}
    other_ds = service_api.ok("POST", "/api/v1/datasets", 201, json=mine)
    upload(service_api, other_ds["id"], ("payroll.md", SECRET))
    yield {"dataset": ds, "other_dataset": other_ds, "reader": keys["reader"]}
    keys["reader"].close()


def search(page: Any, query: str) -> None:
    page.get_by_label("Query").fill(query)
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator(".sandbox-status").filter(has_text=re.compile(r"hits? in \d+ ms")).wait_for()


def hit(page: Any, rank: int, column: Any = None) -> Any:
    return (column or page).locator(f"li.hit[data-rank='{rank}']")


def test_a_fact_is_hit_first_with_marks_scores_timings_and_neighbours(
    page: Any, ui_server: LiveServer, corpus: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    page.get_by_role("checkbox", name="handbook").wait_for()
    assert page.get_by_role("checkbox", name="payroll").is_checked()  # the service key reads both
    search(page, FACT)
    first = hit(page, 1)
    assert first.get_attribute("data-file") == "lighthouse.md"
    marks = [m.lower() for m in first.locator(".hit-text mark").all_inner_texts()]
    for word in ("keeper", "clockwork", "lens"):  # a long word's stem is marked (dom.queryTerms)
        assert any(word.startswith(m) and len(m) >= 4 for m in marks), (word, marks)
    for component in ("dense", "sparse", "fused", "relevance", "score"):
        cell = first.locator(f"tr[data-score='{component}'] td.num")
        assert re.fullmatch(r"-?\d+\.\d{3}", cell.inner_text()), (component, cell.inner_text())
    timings = page.locator("dl.timings").first
    assert re.search(r"Qdrant\s*[\d.]+ ms", timings.inner_text())
    assert re.search(r"round trip \(browser\)\s*[\d.]+ ms", timings.inner_text())
    assert "q=How+often" in page.url
    assert SERVICE_KEY not in page.url

    first.get_by_role("button", name="Neighbours").click()
    neighbours = first.locator("li.neighbour")
    neighbours.first.wait_for()
    assert neighbours.count() >= 2
    current = first.locator("li.neighbour.current")
    assert "clockwork lens" in current.inner_text()
    splits = [int(re.search(r"chunk (\d+)", t).group(1)) for t in neighbours.all_inner_texts()]  # type: ignore[union-attr]
    assert splits == sorted(splits)
    href = first.get_by_role("link", name="Open in the chunk viewer").get_attribute("href")
    assert href.startswith(f"#/datasets/{corpus['dataset']['id']}/files/")
    assert "?split=" in href
    shot(page, "sandbox", tmp_path)

    search(page, "sourdough starter loaves")
    assert hit(page, 1).get_attribute("data-file") == "bakery.md"
    page.go_back()  # the previous search, from the hash
    page.locator("li.hit[data-rank='1'][data-file='lighthouse.md']").wait_for()
    assert page.get_by_label("Query").input_value() == FACT


def test_compare_dense_against_sparse_shows_two_lists_with_shared_hits(
    page: Any, ui_server: LiveServer, corpus: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    link = f"#/sandbox?q={quote(FACT)}&cmp=1&mode=dense&k=4&b.mode=sparse&b.k=4"
    page.goto(f"{ui_server.url}/ui/{link}")
    a = page.get_by_role("region", name="Results A")
    b = page.get_by_role("region", name="Results B")
    hit(page, 1, a).wait_for()
    hit(page, 1, b).wait_for()
    assert "dense" in a.locator("h2").inner_text()
    assert "sparse" in b.locator("h2").inner_text()
    assert hit(page, 1, a).get_attribute("data-file") == "lighthouse.md"
    assert hit(page, 1, b).get_attribute("data-file") == "lighthouse.md"
    assert "also #1 in B (=)" in hit(page, 1, a).inner_text()
    assert a.locator("li.hit").count() >= 1
    assert b.locator("li.hit").count() >= 1
    assert page.get_by_role("button", name="Compare A / B").get_attribute("aria-pressed") == "true"
    assert page.locator(".knobs-b").get_by_label("Mode").input_value() == "sparse"  # set B from the link
    shot(page, "sandbox-compare", tmp_path)


def test_a_relevance_floor_nothing_passes_says_so(
    page: Any, ui_server: LiveServer, corpus: dict[str, Any]
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    page.locator(".knobs-a").get_by_label("Min relevance").fill("0.99")
    page.get_by_label("Query").fill("what colour is the sky on mars")
    page.get_by_role("button", name="Search", exact=True).click()
    page.get_by_text("No hits above the relevance floor 0.99").wait_for()
    assert page.locator("li.hit").count() == 0
    assert "min=0.99" in page.url


def test_a_tenant_key_sees_only_its_own_datasets_and_hits(
    page: Any, ui_server: LiveServer, corpus: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, corpus["reader"].key)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    page.get_by_role("checkbox", name="payroll").wait_for()
    assert page.locator(".dataset-picker input[type=checkbox]").count() == 1
    search(page, FACT)
    files = {h.get_attribute("data-file") for h in page.locator("li.hit").all()}
    assert files == {"payroll.md"}, files
    assert "clockwork" not in page.locator("main").inner_text()
    page.locator("li.hit").first.scroll_into_view_if_needed()
    shot(page, "sandbox-phone", tmp_path)


def test_hostile_content_is_shown_as_text(page: Any, ui_server: LiveServer, corpus: dict[str, Any]) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    search(page, "quarantine notice greenhouse")
    first = hit(page, 1)
    assert first.get_attribute("data-file") == "notice.md"
    assert "<img src=x onerror=alert(1)>" in first.locator(".hit-text").inner_text()
    first.get_by_role("button", name="Neighbours").click()
    first.locator("li.neighbour.current").wait_for()
    page.wait_for_timeout(300)
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("main img").count() == 0
    assert dialogs == []


def test_the_service_key_also_searches_collections_outside_datasets(
    page: Any, ui_server: LiveServer, service_api: Api, corpus: dict[str, Any]
) -> None:
    """Open WebUI's collections (ingested by PUT /api/v1/ingest) are searchable beside datasets."""
    form = {"file_id": "owui-lock", "filename": "lock.md", "collection_name": "owui-kb-1", "user_id": "u"}
    text = b"# Canal lock\n\nThe canal lock keeper opens the sluice gates at half past five.\n"
    service_api.ok("PUT", "/api/v1/ingest", files={"file": ("lock.md", text)}, data=form)
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    raw = page.get_by_role("checkbox", name=re.compile("^owui-kb-1"))
    raw.wait_for()
    assert not raw.is_checked()  # datasets by default; a raw collection when asked
    page.get_by_role("button", name="None").click()
    raw.check()
    search(page, "When are the sluice gates opened?")
    first = hit(page, 1)
    assert first.get_attribute("data-file") == "lock.md"
    assert "owui-kb-1" in first.inner_text()
    assert first.get_by_role("button", name="Neighbours").count() == 0  # no dataset: no chunk viewer
    assert hit(page, 2).count() == 0 or hit(page, 2).get_attribute("data-file") == "lock.md"
    assert "col=owui-kb-1" in page.url

    page.get_by_role("button", name="All").click()  # every dataset and the collection
    search(page, "When are the sluice gates opened?")
    files = {hit(page, n).get_attribute("data-file") for n in range(1, 4)}
    assert "lock.md" in files
    assert files & {"lighthouse.md", "bakery.md", "orchard.md", "notice.md", "payroll.md"}


FERRY = "The ferryman rows the copper barge across the estuary at slack tide, twice a day."
FILLER = " ".join(
    f"Paragraph {n} of the parish almanac records the weather, the hay harvest and the church bells."
    for n in range(24)
)


@pytest.fixture(scope="module")
def long_chunk(service_api: Api, corpus: dict[str, Any]) -> dict[str, Any]:
    """One file chunked as one long chunk, its fact far below the chunk's first lines."""
    body = {
        "name": "almanac",
        "tenant_id": corpus["dataset"]["tenant_id"],
        "chunking": {"strategy": "recursive", "size": 6000, "overlap": 0},
    }
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json=body)
    upload(service_api, ds["id"], ("almanac.md", f"# Almanac\n\n{FILLER} {FERRY} {FILLER}"))
    return ds  # type: ignore[no-any-return]


def test_on_a_phone_the_results_come_into_view_after_a_search(
    page: Any, ui_server: LiveServer, corpus: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.set_viewport_size(PHONE)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    page.get_by_role("checkbox", name="handbook").wait_for()
    page.get_by_label("Query").fill(FACT)
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator(".sandbox-status").filter(has_text=re.compile(r"hits? in \d+ ms")).wait_for()
    # the form is taller than the phone's screen: the first hit is scrolled up into it
    wait_until(
        page,
        "(() => { const r = document.querySelector('li.hit').getBoundingClientRect();"
        " return r.top >= 0 && r.top < innerHeight - 40; })()",
        "the first hit is scrolled into view",
        timeout_s=5,
    )
    status = page.locator(".sandbox-status").bounding_box()
    assert status is not None
    assert status["y"] >= 0
    shot(page, "sandbox-phone-results", tmp_path)


def test_a_long_chunk_shows_the_passage_that_matched(
    page: Any, ui_server: LiveServer, long_chunk: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    query = quote("When does the ferryman row the copper barge?")
    page.goto(f"{ui_server.url}/ui/#/sandbox?q={query}&ds={long_chunk['id']}")
    first = hit(page, 1)
    first.wait_for()
    assert first.get_attribute("data-file") == "almanac.md"
    text = first.locator(".hit-text")
    shown = text.inner_text()
    assert "ferryman rows the copper barge" in shown
    assert shown.startswith("… "), shown[:80]  # cut before the match, at a sentence start
    assert len(shown) <= 430  # a window, not the whole chunk
    mark = text.locator("mark").filter(has_text=re.compile("^ferryman$", re.I)).first
    box, frame = mark.bounding_box(), text.bounding_box()
    assert box is not None
    assert frame is not None
    assert frame["y"] <= box["y"] < frame["y"] + frame["height"]  # the match is in sight, not scrolled away
    first.scroll_into_view_if_needed()
    shot(page, "sandbox-snippet", tmp_path)
    whole = first.get_by_role("button", name="Whole chunk")
    whole.click()
    assert whole.get_attribute("aria-expanded") == "true"
    full = text.inner_text()
    assert len(full) > len(shown)
    assert not full.startswith("…")
    assert shown.removeprefix("… ").removesuffix(" …") in full
    whole.click()
    assert text.inner_text() == shown


def test_the_query_field_holds_the_servers_limit_and_a_refused_query_says_why(
    page: Any, ui_server: LiveServer, corpus: dict[str, Any]
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    field = page.get_by_label("Query")
    field.wait_for()
    assert field.get_attribute("maxlength") == "2000"
    field.fill("lighthouse keeper")
    counter = page.locator(".query-count")
    assert counter.inner_text() == "17 / 2,000 characters"
    assert field.get_attribute("aria-describedby") == counter.get_attribute("id")
    field.fill("x" * 2100)  # typing and pasting stop at the limit
    assert len(field.input_value()) == 2000
    assert counter.inner_text() == "2,000 / 2,000 characters"
    # a longer query from a link reaches the server, and its refusal is shown with its code
    page.goto(f"{ui_server.url}/ui/#/sandbox?q={'lighthouse%20' * 200}")
    status = page.locator(".sandbox-status")
    status.filter(has_text="INVALID_REQUEST").wait_for()
    assert "2000 characters" in status.inner_text()
    assert "error" in (status.get_attribute("class") or "")


def test_a_filter_narrows_the_hits_and_one_that_matches_nothing_says_so(
    page: Any, ui_server: LiveServer, corpus: dict[str, Any]
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox")
    page.get_by_role("checkbox", name="handbook").wait_for()
    only = '{"must": [{"key": "name", "match": {"value": "orchard.md"}}]}'
    page.locator(".knobs-a").get_by_text("Edit as JSON").click()
    page.locator(".knobs-a").get_by_label("Filter (JSON)").fill(only)
    search(page, FACT)
    files = {hit(page, 1).get_attribute("data-file")} | {
        li.get_attribute("data-file") for li in page.locator("li.hit").all()
    }
    assert files == {"orchard.md"}
    page.get_by_text(re.compile(r"The filter admits \d+ chunks?\.")).wait_for()
    assert "f=%7B" in page.url  # the filter is part of the link

    page.locator(".knobs-a").get_by_label("Filter (JSON)").fill(
        '{"must": [{"key": "tags", "match": {"value": "none"}}]}'
    )
    page.get_by_role("button", name="Search", exact=True).click()
    page.get_by_text("The filter matched no chunks").wait_for()
    assert page.locator("li.hit").count() == 0

    page.locator(".knobs-a").get_by_label("Filter (JSON)").fill('{"must": [{"key": "colour"}]}')
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator(".sandbox-status.error").filter(has_text="INVALID_FILTER").wait_for()
    assert "unknown key 'colour'" in page.locator(".sandbox-status").inner_text()


# ---- the filter builder ----------------------------------------------------------------

LEDGER = {
    "invoice-2023.md": (
        ["invoice"],
        "2023-03-01",
        "The invoice for the harbour crane repairs was paid in spring.",
    ),
    "invoice-2025.md": (
        ["invoice"],
        "2025-02-01",
        "The invoice for the harbour crane paint was paid in winter.",
    ),
    "receipt-2025.md": (
        ["receipt"],
        "2025-06-01",
        "The receipt for the harbour crane cable was filed in summer.",
    ),
    "memo.md": (["memo"], "2025-04-01", "The memo about the harbour crane schedule was sent to the crew."),
}
CRANE = "harbour crane invoice"


@pytest.fixture(scope="module")
def ledger(service_api: Api) -> dict[str, Any]:
    """A dataset whose files carry tags and a date field (``issued``), one upload each."""
    tenant_id, _ = new_tenant(service_api, "ledger-co")
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json={"name": "ledger", "tenant_id": tenant_id})
    for name, (tags, issued, text) in LEDGER.items():
        form = {"tags": json.dumps(tags), "fields": json.dumps({"issued": issued})}
        parts = [("files", (name, f"# {name}\n\n{text}".encode(), "text/markdown"))]
        sent = service_api.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts, data=form)
        assert service_api.wait_job(sent["job"]["id"])["status"] == "succeeded"
    return ds  # type: ignore[no-any-return]


def clause(page: Any, n: int) -> Any:
    return page.locator(".knobs-a li.filter-clause").nth(n)


def api_files(api: Api, dataset_id: str, filter_: dict[str, Any]) -> set[str]:
    body = {"query": CRANE, "k": 5, "mode": "hybrid", "dataset_ids": [dataset_id], "filter": filter_}
    return {hit["name"] for hit in api.ok("POST", "/api/v1/search", json=body)["results"]}


def shown_files(page: Any) -> set[str]:
    return {li.get_attribute("data-file") for li in page.locator("li.hit").all()}


def test_the_filter_builder_narrows_the_hits_as_its_json_does(
    page: Any, ui_server: LiveServer, service_api: Api, ledger: dict[str, Any], tmp_path: Path
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox?ds={ledger['id']}")
    knobs = page.locator(".knobs-a")
    knobs.get_by_role("button", name="Add a condition").click()
    # the new row takes the keyboard: its first control is focused
    assert page.evaluate("document.activeElement.name") == "a-fc1-group"
    row = clause(page, 0)
    row.get_by_label("Key").select_option("tags")
    row.get_by_label("Operator").select_option(label="is any of")
    row.get_by_label("Values").fill("invoice, receipt")
    knobs.get_by_role("button", name="Add a condition").click()
    row = clause(page, 1)
    row.get_by_label("Key").select_option(label="field…")
    row.get_by_label("Field name").fill("issued")
    row.get_by_label("Type").select_option(label="date")
    row.get_by_label("Operator").select_option(label="on or after")
    row.get_by_label("Value").fill("2025-01-01")

    equivalent = {
        "must": [
            {"key": "tags", "match": {"any": ["invoice", "receipt"]}},
            {"key": "fields.issued", "range": {"gte": "2025-01-01"}},
        ]
    }
    assert json.loads(knobs.get_by_label("Filter (JSON)").input_value()) == equivalent
    assert page.evaluate(UNNAMED) == []  # every control of the rows has a name
    search(page, CRANE)
    expected = api_files(service_api, ledger["id"], equivalent)
    assert expected == {"invoice-2025.md", "receipt-2025.md"}
    assert shown_files(page) == expected
    page.get_by_text(re.compile(r"The filter admits \d+ chunks?\.")).wait_for()
    assert "f=%7B" in page.url  # the built filter is part of the link
    shot(page, "sandbox-filter-builder", tmp_path)

    # a link carries the filter: the rows come back from it
    page.reload()
    row = clause(page, 1)
    row.get_by_label("Field name").wait_for()
    assert row.get_by_label("Field name").input_value() == "issued"
    assert row.get_by_label("Value").input_value() == "2025-01-01"

    # a condition nothing passes: the sandbox says the filter admitted no chunk
    knobs.get_by_role("button", name="Add a condition").click()
    row = clause(page, 2)
    row.get_by_label("Group").select_option(label="must")
    row.get_by_label("Value").fill("nothing-has-this")
    page.get_by_role("button", name="Search", exact=True).click()
    page.get_by_text("The filter matched no chunks").wait_for()
    assert page.locator("li.hit").count() == 0

    # removed again, the hits are back
    row.get_by_role("button", name="Remove condition 3").click()
    assert clause(page, 2).count() == 0
    # the keyboard stays in the list: on the Remove of the row now last
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Remove condition 2"
    page.get_by_role("button", name="Search", exact=True).click()
    page.locator("li.hit").first.wait_for()
    assert shown_files(page) == expected

    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate(UNNAMED) == []
    knobs.locator(".filter-builder").scroll_into_view_if_needed()
    shot(page, "sandbox-filter-builder-phone", tmp_path)


def test_json_typed_by_hand_is_read_back_into_conditions(
    page: Any, ui_server: LiveServer, ledger: dict[str, Any]
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox?ds={ledger['id']}")
    knobs = page.locator(".knobs-a")
    knobs.get_by_text("Edit as JSON").click()
    typed = {
        "must": [{"key": "fields.issued", "range": {"gte": "2024-01-01", "lt": "2025-03-01"}}],
        "should": [{"key": "fields.amount", "range": {"gte": 10, "lte": 20}}],
        "must_not": [{"key": "fields.paid", "match": {"value": True}}, {"is_empty": {"key": "tags"}}],
    }
    knobs.get_by_label("Filter (JSON)").fill(json.dumps(typed))
    assert page.locator(".knobs-a li.filter-clause").count() == 4
    issued, amount, paid, tags = (clause(page, i) for i in range(4))
    assert issued.get_by_label("Group").input_value() == "must"
    assert issued.get_by_label("Field name").input_value() == "issued"
    assert issued.get_by_label("Type").input_value() == "date"
    assert issued.get_by_label("Operator").input_value() == "between"
    assert issued.get_by_label("From").input_value() == "2024-01-01"
    assert issued.get_by_label("Before").input_value() == "2025-03-01"
    assert amount.get_by_label("Group").input_value() == "should"
    assert amount.get_by_label("Type").input_value() == "number"
    assert (
        amount.get_by_label("From").input_value(),
        amount.get_by_label("To", exact=True).input_value(),
    ) == ("10", "20")
    assert paid.get_by_label("Group").input_value() == "must_not"
    assert paid.get_by_label("Type").input_value() == "boolean"
    assert paid.get_by_label("Value").input_value() == "true"
    assert tags.get_by_label("Key").input_value() == "tags"
    assert tags.get_by_label("Operator").input_value() == "empty"
    assert not knobs.locator(".filter-json-note").is_visible()

    # a change in a row rewrites the JSON; the rest stays as typed
    paid.get_by_label("Value").select_option("false")
    typed["must_not"][0]["match"]["value"] = False  # type: ignore[index]
    assert json.loads(knobs.get_by_label("Filter (JSON)").input_value()) == typed


def test_a_nested_filter_keeps_its_json_and_says_it_is_edited_as_json(
    page: Any, ui_server: LiveServer, service_api: Api, ledger: dict[str, Any]
) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox?ds={ledger['id']}")
    knobs = page.locator(".knobs-a")
    knobs.get_by_text("Edit as JSON").click()
    nested = (
        '{"should": [{"must": [{"key": "tags", "match": {"value": "invoice"}},'
        ' {"key": "fields.issued", "range": {"lt": "2024-01-01"}}]},'
        ' {"key": "tags", "match": {"value": "memo"}}]}'
    )
    knobs.get_by_label("Filter (JSON)").fill(nested)
    knobs.get_by_text("This filter is edited as JSON").wait_for()
    assert not knobs.get_by_role("button", name="Add a condition").is_visible()
    assert knobs.get_by_label("Filter (JSON)").input_value() == nested
    search(page, CRANE)
    expected = api_files(service_api, ledger["id"], json.loads(nested))
    assert expected == {"invoice-2023.md", "memo.md"}
    assert shown_files(page) == expected

    # the link brings back the text and the note, the box open
    page.reload()
    knobs.get_by_text("This filter is edited as JSON").wait_for()
    assert knobs.get_by_label("Filter (JSON)").input_value() == nested
    # a filter the rows can say again brings the rows back
    knobs.get_by_label("Filter (JSON)").fill('{"must": [{"key": "tags", "match": {"value": "memo"}}]}')
    assert clause(page, 0).get_by_label("Value").input_value() == "memo"
    assert not knobs.locator(".filter-json-note").is_visible()


def test_the_builder_offers_the_datasets_fields_with_their_types(
    page: Any, ui_server: LiveServer, ledger: dict[str, Any]
) -> None:
    """The datasets' own fields (GET …/fields) are keys of their own: choosing one sets its type,
    so a date field gets the date operators and a date input, and a typeless "exists" gets it too."""
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/sandbox?ds={ledger['id']}")
    knobs = page.locator(".knobs-a")
    knobs.get_by_role("button", name="Add a condition").click()
    row = clause(page, 0)
    row.get_by_label("Key").locator("option", has_text="issued (date)").wait_for(state="attached")
    row.get_by_label("Key").select_option(label="issued (date)")
    assert row.get_by_label("Type").input_value() == "date"
    assert row.get_by_label("Field name").input_value() == "issued"
    row.get_by_label("Operator").select_option(label="on or after")
    assert row.get_by_label("Value").get_attribute("type") == "date"
    row.get_by_label("Value").fill("2025-01-01")
    built = json.loads(knobs.get_by_label("Filter (JSON)").input_value())
    assert built == {"must": [{"key": "fields.issued", "range": {"gte": "2025-01-01"}}]}
    assert row.get_by_label("Key").input_value() == "fields.issued"
    assert page.evaluate(UNNAMED) == []

    # "exists" says no type in its JSON: the row takes the one the dataset records
    knobs.get_by_text("Edit as JSON").click()
    knobs.get_by_label("Filter (JSON)").fill('{"must_not": [{"exists": {"key": "fields.issued"}}]}')
    assert clause(page, 0).get_by_label("Type").input_value() == "date"
    assert clause(page, 0).get_by_label("Key").input_value() == "fields.issued"

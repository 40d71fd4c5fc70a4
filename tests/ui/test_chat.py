"""The chat screen (#/chat) in a real browser, through ragd's own proxy (/v1/chat/completions).

The upstream LLM is a scripted OpenAI-compatible server on loopback streaming real SSE; ragd
retrieves from a dataset of the live server and sends the sources with the finish chunk. Without
an LLM (the ordinary ``ui_server``) the screen says how to configure one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer
from tests.support.scripted_http import Reply, ScriptedServer, chunk_event
from tests.ui.conftest import chat_live_server, shot, sign_in

CHAT = "/v1/chat/completions"
LIGHTHOUSE = (
    "# Skerryvore lighthouse\n\nThe keeper winds the clockwork lens mechanism every four hours "
    "through the night, and logs each winding in the lamp book."
)
QUESTION = "How often does the lighthouse keeper wind the clockwork lens?"
ANSWER = ["The keeper winds", " the clockwork lens", " every four hours [1]", " and logs it."]


def streamed(parts: list[str], delay_s: float = 0.05) -> Reply:
    events: list[dict[str, Any] | str] = [chunk_event({"role": "assistant", "content": ""})]
    events += [chunk_event({"content": part}) for part in parts]
    events += [chunk_event({}, "stop"), "[DONE]"]
    return Reply.sse(events, chunk_delay_s=delay_s)


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def chat_server(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    with chat_live_server(tmp_path_factory.mktemp("chat") / "data", model_cache, upstream.url) as live:
        yield live


@pytest.fixture(scope="module")
def dataset(chat_server: LiveServer) -> Iterator[dict[str, Any]]:
    service = Api(chat_server.url, SERVICE_KEY)
    tenant_id, _ = new_tenant(service, "lights")
    ds = service.ok("POST", "/api/v1/datasets", 201, json={"name": "lights", "tenant_id": tenant_id})
    parts = [("files", ("lighthouse.md", LIGHTHOUSE.encode(), "text/markdown"))]
    sent = service.ok("POST", f"/api/v1/datasets/{ds['id']}/files", 202, files=parts)
    assert service.wait_job(sent["job"]["id"])["status"] == "succeeded"
    yield ds
    service.close()


def ask(page: Any, text: str) -> None:
    page.get_by_role("textbox", name="Message").fill(text)
    page.get_by_role("textbox", name="Message").press("Enter")


def test_a_streamed_answer_cites_its_source_chunk(
    page: Any, chat_server: LiveServer, upstream: ScriptedServer, dataset: dict[str, Any], tmp_path: Path
) -> None:
    upstream.expect("POST", CHAT, streamed(ANSWER), streamed(["Yes, at night [1]."]))
    sign_in(page, chat_server.url, SERVICE_KEY)
    page.goto(f"{chat_server.url}/ui/#/chat")
    page.get_by_label("Dataset").wait_for()
    assert page.get_by_text("Answered by up-model").is_visible()
    log = page.get_by_role("log", name="Conversation")
    ask(page, QUESTION)
    log.get_by_text("The keeper winds").wait_for()  # the first tokens, before the answer ends
    cite = log.get_by_role("button", name="Source 1: lighthouse.md")
    cite.wait_for()
    assert "every four hours [1] and logs it." in log.locator(".msg.assistant").inner_text()
    assert page.get_by_role("button", name="Stop").is_disabled()

    cite.click()
    panel = log.locator(".source-panel")
    assert "lighthouse.md" in panel.inner_text()
    assert "clockwork lens mechanism" in panel.locator(".snippet").inner_text()
    href = panel.get_by_role("link", name="Open the source chunk").get_attribute("href")
    assert re.fullmatch(rf"#/datasets/{dataset['id']}/files/[^/?]+\?split=0", href), href
    assert cite.get_attribute("aria-expanded") == "true"

    sent = upstream.requests_to("POST", CHAT)[-1].json
    assert sent["stream"] is True
    assert sent["model"] == "up-model"
    assert "clockwork lens mechanism" in sent["messages"][0]["content"]  # the retrieved source
    assert sent["messages"][-1] == {"role": "user", "content": QUESTION}
    page.emulate_media(color_scheme="dark")
    shot(page, "chat", tmp_path)

    ask(page, "Does the lighthouse keeper log each winding of the clockwork lens?")  # carries turn 1
    log.get_by_text("Yes, at night").wait_for()
    log.locator(".msg.assistant").nth(1).get_by_role("button", name="Source 1: lighthouse.md").wait_for()
    history = upstream.requests_to("POST", CHAT)[-1].json["messages"]
    assert [m["role"] for m in history[1:]] == ["user", "assistant", "user"]
    assert history[2]["content"] == "".join(ANSWER)
    upstream.verify()

    page.get_by_role("button", name="New chat").click()
    assert log.locator(".msg").count() == 0


def test_stop_ends_a_streaming_answer(
    page: Any, chat_server: LiveServer, upstream: ScriptedServer, dataset: dict[str, Any]
) -> None:
    upstream.expect("POST", CHAT, streamed(["Slowly", " then", " more", " and", " more"], delay_s=0.6))
    sign_in(page, chat_server.url, SERVICE_KEY)
    page.goto(f"{chat_server.url}/ui/#/chat")
    ask(page, QUESTION)
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text("Slowly").wait_for()
    page.get_by_role("button", name="Stop").click()
    log.get_by_text("Stopped.").wait_for()
    assert page.get_by_role("button", name="Send").is_enabled()
    assert "more and more" not in log.inner_text()


def test_without_an_llm_the_screen_says_how_to_configure_one(page: Any, ui_server: LiveServer) -> None:
    sign_in(page, ui_server.url, SERVICE_KEY)
    page.goto(f"{ui_server.url}/ui/#/chat")
    page.get_by_role("heading", name="Chat is not enabled on this server").wait_for()
    text = page.locator("main").inner_text()
    assert "RAGD_LLM__BASE_URL" in text
    assert "RAGD_LLM__MODEL" in text
    assert "restart" in text
    assert page.get_by_role("textbox", name="Message").count() == 0
    assert "docs/chat.md" not in text  # a path the browser cannot open: a link instead
    page.get_by_role("link", name="the System screen").click()
    page.get_by_role("heading", name="System", level=1).wait_for()
    page.get_by_label("Search settings").fill("chat.enabled")
    page.locator("th.setting-key", has_text="chat.enabled").wait_for()


def test_the_service_key_chats_over_a_collection_outside_datasets(
    page: Any, chat_server: LiveServer, upstream: ScriptedServer, dataset: dict[str, Any]
) -> None:
    """Open WebUI's collections (PUT /api/v1/ingest) are offered beside the datasets."""
    service = Api(chat_server.url, SERVICE_KEY)
    form = {"file_id": "owui-lamp", "filename": "lamp.md", "collection_name": "owui-lamp", "user_id": "u"}
    text = b"# Lamp room\n\nThe lamp room windows are polished with vinegar every Sunday.\n"
    service.ok("PUT", "/api/v1/ingest", files={"file": ("lamp.md", text)}, data=form)
    service.close()
    upstream.expect("POST", CHAT, streamed(["Vinegar, on Sundays [1]."]))
    sign_in(page, chat_server.url, SERVICE_KEY)
    page.goto(f"{chat_server.url}/ui/#/chat")
    page.get_by_label("Dataset or collection").select_option(label="owui-lamp (collection)")
    log = page.get_by_role("log", name="Conversation")
    ask(page, "What are the lamp room windows polished with?")
    cite = log.get_by_role("button", name="Source 1: lamp.md")
    cite.click()
    panel = log.locator(".source-panel")
    assert "polished with vinegar" in panel.locator(".snippet").inner_text()
    assert panel.get_by_role("link", name="Open the source chunk").count() == 0  # no dataset, no viewer
    sent = upstream.requests_to("POST", CHAT)[-1].json
    assert "polished with vinegar" in sent["messages"][0]["content"]

"""The vision client against a multimodal endpoint on loopback: the wire format, the cache, retries,
and every way a call fails with its code (never cut, never a 500)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from pydantic import SecretStr

from ragd.errors import VisionOutputTooLong, VisionUnavailable
from ragd.settings import VisionSettings
from ragd.vision.budget import CallRate, Deadline
from ragd.vision.cache import AnswerCache, answer_key
from ragd.vision.client import VisionClient
from ragd.vision.profiles import PROFILE_NAMES, profile
from tests.support.vision_endpoint import VisionEndpoint


def png(width: int = 40, height: int = 30, colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def client(endpoint: VisionEndpoint, cache: Path | None = None, **settings: object) -> VisionClient:
    given = VisionSettings(api_base_url=endpoint.url, model="scripted-vl", **settings)  # type: ignore[arg-type]
    return VisionClient(given, cache=AnswerCache(cache))


def deadline(seconds: float = 30.0) -> Deadline:
    return Deadline("chart.pdf", seconds)


def test_one_image_per_call_in_the_chat_completions_wire_format(vision_endpoint: VisionEndpoint) -> None:
    image = png()
    asker = client(vision_endpoint, api_key=SecretStr("sk-vision"), max_tokens=777, language_hint="Danish")
    answer = asker.ask(image, profile("general"), deadline=deadline())
    asker.close()
    [call] = vision_endpoint.calls
    assert answer == f"Picture {hashlib.sha256(image).hexdigest()[:12]} of 40 x 30 pixels."
    assert (call.model, call.max_tokens, call.profile) == ("scripted-vl", 777, "general")
    assert call.image.sha256 == hashlib.sha256(image).hexdigest()
    assert (call.image.mime, call.image.width, call.image.height) == ("image/png", 40, 30)
    assert "Danish-language" in call.system
    assert call.body["temperature"] == 0
    [request] = vision_endpoint.requests
    assert request.header("authorization") == "Bearer sk-vision"


def test_text_beside_the_image_goes_between_the_prompt_and_the_image(vision_endpoint: VisionEndpoint) -> None:
    asker = client(vision_endpoint)
    asker.ask(png(), profile("diagram-topology"), deadline=deadline(), context="Start\nApprove")
    parts = vision_endpoint.calls[0].body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "image_url"]
    assert parts[1]["text"] == "Start\nApprove"
    asker.close()


def test_an_answer_is_asked_once_then_read_from_the_cache(
    vision_endpoint: VisionEndpoint, tmp_path: Path
) -> None:
    image = png()
    first = client(vision_endpoint, tmp_path)
    answer = first.ask(image, profile("figure"), deadline=deadline())
    first.close()
    second = client(vision_endpoint, tmp_path)  # another process: the cache is on disk
    assert second.ask(image, profile("figure"), deadline=deadline()) == answer
    assert (len(vision_endpoint.calls), second.calls, second.cached) == (1, 0, 1)
    second.ask(image, profile("ocr"), deadline=deadline())  # another profile asks again
    second.ask(png(colour=(0, 0, 255)), profile("figure"), deadline=deadline())  # another image too
    assert len(vision_endpoint.calls) == 3
    second.close()
    assert not list(tmp_path.rglob(".tmp-*"))


def test_the_cache_key_holds_everything_that_changes_an_answer() -> None:
    base = {"model": "m", "profile": "figure", "prompt_version": "v1", "language": "", "context": ""}
    key = answer_key("abc", **base)
    for field, other in (("model", "m2"), ("profile", "ocr"), ("prompt_version", "v2"), ("language", "da")):
        assert answer_key("abc", **{**base, field: other}) != key
    assert answer_key("abd", **base) != key
    assert answer_key("abc", **{**base, "context": "labels"}) != key


def test_an_unreadable_cache_file_is_a_miss(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path)
    cache.put("ab" * 32, "an answer")
    assert cache.get("ab" * 32) == "an answer"
    (tmp_path / "ab" / f"{'ab' * 32}.json").write_text("{not json")
    assert cache.get("ab" * 32) is None
    assert AnswerCache(None).get("ab" * 32) is None


def test_every_profile_has_its_prompts_and_a_version() -> None:
    versions = {profile(name).version for name in PROFILE_NAMES}
    assert set(PROFILE_NAMES) == {"diagram", "diagram-topology", "general", "figure", "ocr"}
    assert len(versions) == len(PROFILE_NAMES)
    assert "mermaid" in profile("diagram").user
    assert "summary" in profile("diagram").user
    assert "mermaid" in profile("diagram-topology").user
    assert "Markdown" in profile("general").system
    assert "exactly" in profile("ocr").system
    assert "the document's own language" in profile("ocr").system_prompt("")
    assert "Danish-language" in profile("figure").system_prompt("Danish")
    with pytest.raises(ValueError, match="valid profiles: diagram, diagram-topology, general"):
        profile("poster")


def test_429_and_503_are_retried_within_the_budget(vision_endpoint: VisionEndpoint) -> None:
    vision_endpoint.fail(429, retry_after="0").fail(503, retry_after="0")
    asker = client(vision_endpoint, retries=2)
    assert asker.ask(png(), profile("general"), deadline=deadline()).startswith("Picture ")
    assert len(vision_endpoint.calls) == 3
    asker.close()


@pytest.mark.parametrize("status", [500, 400, 401])
def test_other_statuses_fail_at_once_with_the_endpoint_s_message(
    vision_endpoint: VisionEndpoint, status: int
) -> None:
    vision_endpoint.fail(status)
    asker = client(vision_endpoint, retries=3)
    with pytest.raises(VisionUnavailable) as caught:
        asker.ask(png(), profile("general"), deadline=deadline())
    assert f"HTTP {status}" in caught.value.message
    assert f"scripted {status}" in caught.value.message
    assert (caught.value.code, caught.value.http_status, caught.value.permanent) == (
        "VISION_UNAVAILABLE",
        422,
        False,
    )
    assert len(vision_endpoint.calls) == 1
    asker.close()


def test_a_503_past_its_retries_fails(vision_endpoint: VisionEndpoint) -> None:
    vision_endpoint.fail(503, times=None, retry_after="0")
    asker = client(vision_endpoint, retries=1)
    with pytest.raises(VisionUnavailable, match="HTTP 503"):
        asker.ask(png(), profile("general"), deadline=deadline())
    assert len(vision_endpoint.calls) == 2
    asker.close()


def test_a_call_that_hangs_is_cut_at_its_timeout(vision_endpoint: VisionEndpoint) -> None:
    vision_endpoint.hang(30)
    asker = client(vision_endpoint, timeout_s=0.3)
    with pytest.raises(VisionUnavailable, match=r"did not answer .* within 0.3 s") as caught:
        asker.ask(png(), profile("general"), deadline=deadline())
    assert "RAGD_VISION__TIMEOUT_S" in (caught.value.hint or "")
    asker.close()


def test_the_file_s_deadline_bounds_a_call(vision_endpoint: VisionEndpoint) -> None:
    vision_endpoint.hang(30)
    asker = client(vision_endpoint, timeout_s=60)
    with pytest.raises(VisionUnavailable, match=r"took longer than 0\.3 s") as caught:
        asker.ask(png(), profile("general"), deadline=deadline(0.3))
    assert "RAGD_EXTRACT__TIMEOUT_S" in (caught.value.hint or "")
    asker.close()


def test_a_dropped_connection_and_a_closed_endpoint_are_unavailable(vision_endpoint: VisionEndpoint) -> None:
    vision_endpoint.drop()
    asker = client(vision_endpoint)
    with pytest.raises(VisionUnavailable, match="cannot be reached"):
        asker.ask(png(), profile("general"), deadline=deadline())
    vision_endpoint.close()
    with pytest.raises(VisionUnavailable, match="cannot be reached"):
        asker.ask(png(), profile("general"), deadline=deadline())
    asker.close()


def test_an_answer_cut_at_max_tokens_fails_rather_than_being_kept(
    vision_endpoint: VisionEndpoint, tmp_path: Path
) -> None:
    vision_endpoint.cut()
    asker = client(vision_endpoint, tmp_path, max_tokens=64)
    with pytest.raises(VisionOutputTooLong, match="64-token cap") as caught:
        asker.ask(png(), profile("general"), deadline=deadline())
    assert (caught.value.code, caught.value.permanent) == ("VISION_OUTPUT_TOO_LONG", True)
    assert not list(tmp_path.rglob("*.json"))  # nothing cut was cached
    asker.close()


def test_an_answer_that_is_not_a_chat_completion_is_unavailable(vision_endpoint: VisionEndpoint) -> None:
    vision_endpoint.garbage()
    asker = client(vision_endpoint)
    with pytest.raises(VisionUnavailable, match="not a chat completion"):
        asker.ask(png(), profile("general"), deadline=deadline())
    asker.close()


def test_the_call_rate_refuses_a_slot_past_the_deadline() -> None:
    rate = CallRate(1)  # one call a minute
    rate.wait(deadline())
    with pytest.raises(VisionUnavailable, match="took longer"):
        rate.wait(deadline(5))  # the next slot is a minute away
    CallRate(0).wait(deadline(0.001))  # no limit: never waits


def test_settings_refuse_an_endpoint_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        VisionSettings(api_base_url="file:///etc/passwd")
    assert VisionSettings(api_base_url="http://vl:8000/v1/").api_base_url == "http://vl:8000/v1"
    assert json.loads(VisionSettings().model_dump_json())["api_base_url"] == ""

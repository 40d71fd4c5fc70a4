"""What ``POST /api/v1/extract`` may ask for: an engine by name, and a profile for a vision engine.

``auto`` is the router (leave ``engine`` out to use it) and an unknown name lists the valid ones;
a vision engine while no endpoint is configured says which setting turns it on; a ``profile`` is
one of :data:`ragd.vision.profiles.PROFILE_NAMES` and only for a vision engine.  Every refusal is
``400 INVALID_REQUEST``.
"""

from __future__ import annotations

from collections.abc import Collection

from ragd.errors import InvalidRequest
from ragd.vision.profiles import PROFILE_NAMES

VISION_ENGINES = ("vision-llm", "hybrid-diagram")


def check_request(engine: str | None, profile: str | None, *, known: Collection[str], vision: bool) -> None:
    """Raise :class:`InvalidRequest` unless ``engine`` (None: the router) and ``profile`` can run."""
    if engine == "auto":
        raise InvalidRequest(
            "engine 'auto' is the router, not an engine: leave engine out to read the file as ingest does",
            hint=f"or name one of: {', '.join(sorted({*known, *VISION_ENGINES}))}",
        )
    if engine in VISION_ENGINES and not vision:
        raise InvalidRequest(
            f"engine {engine!r} needs a vision model, and none is configured",
            hint="set RAGD_VISION__API_BASE_URL (and RAGD_VISION__MODEL) to an OpenAI-compatible "
            "endpoint that takes images",
        )
    if engine is not None and engine not in known:
        valid = ", ".join(sorted({*known, *VISION_ENGINES}))
        raise InvalidRequest(f"unknown extraction engine {engine!r}; valid engines: {valid}")
    if profile is None:
        return
    if engine not in VISION_ENGINES:
        raise InvalidRequest(
            f"profile {profile!r} is only for the vision engines ({', '.join(VISION_ENGINES)})",
            hint="send engine=vision-llm or engine=hybrid-diagram with it, or leave profile out",
        )
    if profile not in PROFILE_NAMES:
        raise InvalidRequest(
            f"unknown vision profile {profile!r}; valid profiles: {', '.join(PROFILE_NAMES)}"
        )

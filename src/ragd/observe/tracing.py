"""Traces: a span per pipeline stage when OpenTelemetry is on (``RAGD_OTEL__ENABLED``), nothing
otherwise.  No OpenTelemetry import here: :mod:`ragd.observe.otel` builds the tracer (the ``otel``
extra) and the composition root hands it over; spans nest by the SDK's current context, so a
search's stages are children of its ``search`` span.  Attributes never carry query text or names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any, Protocol


class SpanFactory(Protocol):
    """What an OpenTelemetry ``Tracer`` offers that ragd uses."""

    def start_as_current_span(self, name: str, *, attributes: Mapping[str, Any] | None = None) -> Any: ...


class Tracing:
    """Opens spans through ``tracer`` (an OpenTelemetry tracer), or does nothing without one."""

    def __init__(self, tracer: SpanFactory | None = None) -> None:
        self._tracer = tracer

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    @contextmanager
    def span(self, name: str, **attributes: str | int | float | bool) -> Iterator[None]:
        cm = (
            nullcontext()
            if self._tracer is None
            else self._tracer.start_as_current_span(f"ragd.{name}", attributes=attributes)
        )
        with cm:
            yield

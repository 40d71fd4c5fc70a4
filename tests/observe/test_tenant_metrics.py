"""The per-tenant gauges stay bounded: the first TENANT_LABELS tenants by name, the rest as "other"."""

from __future__ import annotations

from prometheus_client import generate_latest

from ragd.observe.metrics import OTHER_TENANTS, TENANT_LABELS, Metrics


def _samples(metrics: Metrics, family: str) -> dict[str, float]:
    out = {}
    for line in generate_latest(metrics.registry).decode().splitlines():
        if line.startswith(family + "{"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_tenants_past_the_cap_are_summed_as_other_and_old_labels_go() -> None:
    metrics = Metrics()
    rows = [
        (f"t{n:03}", {"chunks": n, "bytes": 10 * n, "running_jobs": 1}, {"max_chunks": 100})
        for n in range(TENANT_LABELS + 5)
    ]
    metrics.set_tenant_usage(list(reversed(rows)))  # ordered by name, whatever the input order
    usage = _samples(metrics, "kb_tenant_usage")
    tenants = {key.split('tenant="', 1)[1].split('"', 1)[0] for key in usage}
    assert len(tenants) == TENANT_LABELS + 1
    assert OTHER_TENANTS in tenants
    assert "t000" in tenants
    assert f"t{TENANT_LABELS:03}" not in tenants
    extra = range(TENANT_LABELS, TENANT_LABELS + 5)
    assert usage[f'kb_tenant_usage{{resource="chunks",tenant="{OTHER_TENANTS}"}}'] == sum(extra)
    assert usage[f'kb_tenant_usage{{resource="running_jobs",tenant="{OTHER_TENANTS}"}}'] == 5
    limits = _samples(metrics, "kb_tenant_limit")
    assert len(limits) == TENANT_LABELS  # the others' limits do not add up: left out
    metrics.set_tenant_usage(rows[:1])  # a deleted tenant's labels do not linger
    assert set(_samples(metrics, "kb_tenant_usage")) == {
        f'kb_tenant_usage{{resource="{r}",tenant="t000"}}' for r in ("chunks", "bytes", "running_jobs")
    }

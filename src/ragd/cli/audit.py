"""``ragd audit``: the audit trail, straight from the catalog (as ``ragd tenants`` reads it).

A table of the newest records, or with ``--jsonl`` every matching record as JSON lines, oldest
first, read a page at a time — the same lines as ``GET /api/v1/audit/export``, for archiving.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.table import Table

from ragd.bootstrap.knowledge import open_catalog_only
from ragd.cli.runner import console, load_settings, run_or_exit
from ragd.kb import audit
from ragd.kb_types import AuditQuery, AuditRecord


def audit_command(
    tenant: Annotated[str | None, typer.Option("--tenant", "-t", help="a tenant id")] = None,
    actor: Annotated[str | None, typer.Option(help="a key id, 'service', 'cli' or 'anonymous'")] = None,
    action: Annotated[str | None, typer.Option(help="an action (key.revoke) or its noun (key)")] = None,
    since: Annotated[str | None, typer.Option(help="epoch seconds or ISO 8601 (UTC unless it says)")] = None,
    until: Annotated[str | None, typer.Option(help="epoch seconds or ISO 8601, exclusive")] = None,
    limit: Annotated[int, typer.Option(min=1, max=audit.MAX_PAGE, help="records in the table")] = 50,
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="every matching record as JSON lines, oldest first")
    ] = False,
    after: Annotated[
        int | None, typer.Option(min=0, help="with --jsonl: only records after this seq")
    ] = None,
) -> None:
    """The audit trail: who did what, when, to what, and how it ended (newest first)."""
    settings = load_settings()

    async def main() -> list[AuditRecord]:
        query = AuditQuery(
            tenant_id=tenant,
            actor=actor,
            action=action,
            since=audit.parse_time("since", since),
            until=audit.parse_time("until", until),
        )
        async with open_catalog_only(settings) as catalog:
            if jsonl:
                async for entry in await audit.export_records(
                    catalog, audit.OPERATOR, query, after_seq=after
                ):
                    sys.stdout.write(json.dumps(audit.as_json(entry), ensure_ascii=False) + "\n")
                return []
            records, _ = await audit.list_records(catalog, audit.OPERATOR, query, limit=limit)
            return records

    records = run_or_exit(main)
    if jsonl:
        return
    table = Table("seq", "when (UTC)", "action", "outcome", "who", "tenant", "target", "client")
    for r in records:
        target = f"{r.target_kind or ''} {r.target_id or ''}".strip()
        table.add_row(
            str(r.seq),
            audit.utc(r.at),
            r.action,
            r.outcome.value,
            r.actor,
            r.tenant_id or "–",
            target,
            r.client or "–",
        )
    console.print(table)

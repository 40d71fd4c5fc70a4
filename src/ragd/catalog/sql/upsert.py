"""Insert-or-replace in one statement (``INSERT … ON CONFLICT DO UPDATE``) on either engine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection


async def upsert(
    conn: AsyncConnection,
    table: Table,
    values: Mapping[str, Any],
    *,
    keep: Iterable[str] = (),
) -> None:
    """Insert ``values``, or update the row with the same primary key (except the ``keep`` columns)."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    key = [c.name for c in table.primary_key.columns]
    kept = {*key, *keep}
    statement = insert(table).values(**values)
    changes = {name: statement.excluded[name] for name in values if name not in kept}
    await conn.execute(statement.on_conflict_do_update(index_elements=key, set_=changes))

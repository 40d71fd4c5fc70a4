"""Source grants: what folder roots and S3 bucket/prefixes a tenant's sources may reach."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sqlalchemy import insert, select, text, update

from ragd.catalog.sql import records
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import source_grants
from ragd.kb_types import SourceGrant


class SqlGrants:
    _db: Database

    async def create_grant(
        self, grant: SourceGrant, *, check: Callable[[list[SourceGrant]], None] | None = None
    ) -> SourceGrant:
        """Store a grant (``created_at`` now); NotFound when the tenant does not exist.  ``check``
        sees every live grant first, in the same transaction, and may raise to store nothing:
        grants are written one at a time (SQLite's one writer; a table lock on PostgreSQL), so two
        concurrent grants cannot both pass it."""
        stored = dataclasses.replace(grant, created_at=self._db.now(), revoked_at=None)
        values = {
            "id": stored.id,
            "tenant_id": stored.tenant_id,
            "kind": stored.kind.value,
            "target": stored.target,
            "shared": stored.shared,
            "created_at": stored.created_at,
            "created_by": stored.created_by,
            "revoked_at": None,
        }
        missing = f"no tenant {grant.tenant_id!r}"
        async with self._db.write(conflict=f"a grant {grant.id!r} exists", missing=missing) as conn:
            if check is not None:
                if self._db.dialect == "postgresql":
                    await conn.execute(text("LOCK TABLE source_grants IN SHARE ROW EXCLUSIVE MODE"))
                live = select(source_grants).where(source_grants.c.revoked_at.is_(None))
                check([records.grant(r) for r in (await conn.execute(live)).mappings()])
            await conn.execute(insert(source_grants).values(**values))
        return stored

    async def get_grant(self, grant_id: str) -> SourceGrant | None:
        query = select(source_grants).where(source_grants.c.id == grant_id)
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().first()
        return records.grant(row) if row is not None else None

    async def list_grants(
        self, tenant_id: str | None = None, *, include_revoked: bool = False
    ) -> list[SourceGrant]:
        query = select(source_grants).order_by(source_grants.c.created_at, source_grants.c.id)
        if tenant_id is not None:
            query = query.where(source_grants.c.tenant_id == tenant_id)
        if not include_revoked:
            query = query.where(source_grants.c.revoked_at.is_(None))
        async with self._db.read() as conn:
            return [records.grant(r) for r in (await conn.execute(query)).mappings()]

    async def revoke_grant(self, grant_id: str) -> SourceGrant | None:
        live = (source_grants.c.id == grant_id) & source_grants.c.revoked_at.is_(None)
        async with self._db.write() as conn:
            await conn.execute(update(source_grants).where(live).values(revoked_at=self._db.now()))
            query = select(source_grants).where(source_grants.c.id == grant_id)
            row = (await conn.execute(query)).mappings().first()
        return records.grant(row) if row is not None else None

"""Tenants and their API keys.  A key's secret is shown once; only its SHA-256 is stored."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence

from sqlalchemy import delete, insert, select, update

from ragd.catalog.sql import records
from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import api_keys, tenant_template, tenants
from ragd.catalog.sql.tables import datasets as datasets_table
from ragd.kb_types import ApiKeyInfo, Dataset, DatasetTemplate, Principal, Tenant

SECRET_PREFIX = "rgd_"
#: characters of the secret kept in clear, to tell keys apart in listings
DISPLAY_PREFIX = 8


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class SqlTenants:
    _db: Database

    async def create_tenant(self, name: str, datasets: Sequence[Dataset] = ()) -> Tenant:
        record = Tenant(id=uuid.uuid4().hex, name=name, created_at=self._db.now())
        rows = [
            {
                "id": d.id,
                "tenant_id": record.id,
                "collection_name": d.collection_name,
                "created_at": record.created_at,
                "updated_at": record.created_at,
                **records.dataset_values(d),
            }
            for d in datasets
        ]
        conflict = f"a tenant named {name!r} exists (or a standard dataset's name repeats)"
        async with self._db.write(conflict=conflict) as conn:
            await conn.execute(insert(tenants).values(id=record.id, name=name, created_at=record.created_at))
            if rows:
                await conn.execute(insert(datasets_table), rows)
        return record

    async def get_tenant_template(self) -> list[DatasetTemplate] | None:
        async with self._db.read() as conn:
            row = (await conn.execute(select(tenant_template.c.datasets))).first()
        return None if row is None else [DatasetTemplate.from_json(d) for d in row[0]]

    async def set_tenant_template(self, datasets: Sequence[DatasetTemplate] | None) -> None:
        async with self._db.write() as conn:
            await conn.execute(delete(tenant_template))
            if datasets is not None:
                values = {"id": 1, "datasets": [d.to_json() for d in datasets], "updated_at": self._db.now()}
                await conn.execute(insert(tenant_template).values(**values))

    async def list_tenants(self) -> list[Tenant]:
        async with self._db.read() as conn:
            rows = await conn.execute(select(tenants).order_by(tenants.c.name))
            return [records.tenant(r) for r in rows.mappings()]

    async def create_key(self, tenant_id: str, role: str, name: str) -> tuple[ApiKeyInfo, str]:
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        info = ApiKeyInfo(
            id=uuid.uuid4().hex,
            tenant_id=tenant_id,
            role=role,
            name=name,
            prefix=secret[:DISPLAY_PREFIX],
            created_at=self._db.now(),
        )
        async with self._db.write(missing="no such tenant") as conn:
            await conn.execute(
                insert(api_keys).values(
                    id=info.id,
                    tenant_id=tenant_id,
                    role=role,
                    name=name,
                    prefix=info.prefix,
                    secret_hash=secret_hash(secret),
                    created_at=info.created_at,
                )
            )
        return info, secret

    async def resolve_key(self, secret: str) -> Principal | None:
        query = select(api_keys.c.id, api_keys.c.tenant_id, api_keys.c.role).where(
            api_keys.c.secret_hash == secret_hash(secret), api_keys.c.revoked_at.is_(None)
        )
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().first()
        if row is None:
            return None
        return Principal(tenant_id=row["tenant_id"], role=row["role"], key_id=row["id"])

    async def list_keys(self, tenant_id: str) -> list[ApiKeyInfo]:
        query = (
            select(api_keys)
            .where(api_keys.c.tenant_id == tenant_id, api_keys.c.revoked_at.is_(None))
            .order_by(api_keys.c.created_at, api_keys.c.id)
        )
        async with self._db.read() as conn:
            return [records.api_key(r) for r in (await conn.execute(query)).mappings()]

    async def revoke_key(self, tenant_id: str, key_id: str) -> bool:
        statement = (
            update(api_keys)
            .where(
                api_keys.c.id == key_id,
                api_keys.c.tenant_id == tenant_id,
                api_keys.c.revoked_at.is_(None),
            )
            .values(revoked_at=self._db.now())
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return result.rowcount > 0

"""The web UI's server-side sessions: a random secret in the browser's cookie, its SHA-256 here.

A session is live while it is not revoked, not expired, and its key (``api_keys``; none for the
service key) is not revoked: :meth:`resolve_ui_session` checks all three in one indexed query, so
revoking a key ends its sessions at once even before :meth:`revoke_key_sessions` marks them.
``last_seen_at`` is written at most once per ``touch_after_s`` (a UI polls every few seconds).
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from sqlalchemy import ColumnElement, RowMapping, Select, and_, delete, insert, or_, select, update

from ragd.catalog.sql.engine import Database
from ragd.catalog.sql.tables import api_keys, ui_sessions
from ragd.catalog.sql.tenants import secret_hash
from ragd.kb_types import ADMIN_ROLE, Principal, UiSession

#: longest user agent kept (the rest is cut)
USER_AGENT_CHARS = 200


class SqlUiSessions:
    _db: Database

    async def create_ui_session(
        self, principal: Principal, ttl_s: float, user_agent: str | None = None
    ) -> tuple[UiSession, str]:
        secret = secrets.token_urlsafe(32)
        now = self._db.now()
        session = UiSession(
            id=uuid.uuid4().hex,
            key_id=principal.key_id if not principal.is_service else None,
            tenant_id=principal.tenant_id,
            role=principal.role,
            created_at=now,
            expires_at=now + ttl_s,
            last_seen_at=now,
            user_agent=_trimmed(user_agent),
        )
        async with self._db.write(missing="no such tenant") as conn:
            await conn.execute(
                insert(ui_sessions).values(
                    id=session.id,
                    secret_hash=secret_hash(secret),
                    key_id=session.key_id,
                    tenant_id=session.tenant_id,
                    created_at=now,
                    expires_at=session.expires_at,
                    last_seen_at=now,
                    user_agent=session.user_agent,
                )
            )
        return session, secret

    async def resolve_ui_session(self, secret: str, *, touch_after_s: float = 60.0) -> UiSession | None:
        now = self._db.now()
        query = _live(now).where(ui_sessions.c.secret_hash == secret_hash(secret))
        async with self._db.read() as conn:
            row = (await conn.execute(query)).mappings().first()
        if row is None:
            return None
        session = _session(row)
        if now - session.last_seen_at >= touch_after_s:
            touch = update(ui_sessions).where(ui_sessions.c.id == session.id).values(last_seen_at=now)
            async with self._db.write() as conn:
                await conn.execute(touch)
        return session

    async def list_ui_sessions(self, tenant_id: str | None, key_id: str | None = None) -> list[UiSession]:
        query = _live(self._db.now()).where(_of_tenant(tenant_id))
        if key_id is not None:
            query = query.where(ui_sessions.c.key_id == key_id)
        query = query.order_by(ui_sessions.c.created_at.desc(), ui_sessions.c.id)
        async with self._db.read() as conn:
            return [_session(r) for r in (await conn.execute(query)).mappings()]

    async def revoke_ui_session(self, session_id: str, tenant_id: str | None) -> bool:
        statement = (
            update(ui_sessions)
            .where(ui_sessions.c.id == session_id, _of_tenant(tenant_id), ui_sessions.c.revoked_at.is_(None))
            .values(revoked_at=self._db.now())
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return result.rowcount > 0

    async def revoke_key_sessions(self, key_id: str | None) -> int:
        now = self._db.now()
        owner = ui_sessions.c.key_id.is_(None) if key_id is None else ui_sessions.c.key_id == key_id
        statement = (
            update(ui_sessions)
            .where(owner, ui_sessions.c.revoked_at.is_(None), ui_sessions.c.expires_at > now)
            .values(revoked_at=now)
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return int(result.rowcount)

    async def purge_ui_sessions(self) -> int:
        now = self._db.now()
        statement = delete(ui_sessions).where(
            or_(ui_sessions.c.expires_at <= now, ui_sessions.c.revoked_at.is_not(None))
        )
        async with self._db.write() as conn:
            result = await conn.execute(statement)
        return int(result.rowcount)


def _live(now: float) -> Select[Any]:
    """The live sessions, each with its key's role."""
    key = and_(api_keys.c.id == ui_sessions.c.key_id, api_keys.c.tenant_id == ui_sessions.c.tenant_id)
    return (
        select(ui_sessions, api_keys.c.role)
        .select_from(ui_sessions.outerjoin(api_keys, key))
        .where(
            ui_sessions.c.revoked_at.is_(None),
            ui_sessions.c.expires_at > now,
            or_(
                and_(ui_sessions.c.key_id.is_(None), ui_sessions.c.tenant_id.is_(None)),
                and_(api_keys.c.id.is_not(None), api_keys.c.revoked_at.is_(None)),
            ),
        )
    )


def _of_tenant(tenant_id: str | None) -> ColumnElement[bool]:
    return ui_sessions.c.tenant_id.is_(None) if tenant_id is None else ui_sessions.c.tenant_id == tenant_id


def _session(row: RowMapping) -> UiSession:
    return UiSession(
        id=row["id"],
        key_id=row["key_id"],
        tenant_id=row["tenant_id"],
        role=row["role"] or ADMIN_ROLE,
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        last_seen_at=row["last_seen_at"],
        user_agent=row["user_agent"],
    )


def _trimmed(user_agent: str | None) -> str | None:
    if not user_agent:
        return None
    text = "".join(c for c in user_agent if c.isprintable())[:USER_AGENT_CHARS].strip()
    return text or None

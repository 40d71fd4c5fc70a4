"""Alembic environment for the catalog, driven from code (see ``ragd.catalog.sql.migrate``).

Online: the caller passes an open (sync-facing) connection in
``config.attributes["connection"]``, already inside its transaction.  Offline
(``--sql``): the URL comes from the ``sqlalchemy.url`` option.
"""

from __future__ import annotations

from alembic import context

from ragd.catalog.sql.tables import metadata


def _run_offline() -> None:
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run the catalog migrations through ragd.catalog.sql.migrate")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    _run_offline()
else:
    _run_online()

"""Alembic environment: runs on the connection storage hands over, never on its own."""

from __future__ import annotations

from alembic import context

from storage.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("storage migrations run through storage.migrations, with a connection")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()

"""Alembic's environment: always online, on the connection that ``upgrade`` passes in."""

from __future__ import annotations

from alembic import context

from colbench.leaderboard._db import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the leaderboard's migrations through "
                       "colbench.leaderboard.migrations.upgrade(engine)")
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
context.run_migrations()

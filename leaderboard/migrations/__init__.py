"""Alembic migrations of the leaderboard's schema, run programmatically (no alembic.ini).

``upgrade(engine)`` brings a database to the newest revision. Several processes may call it
at once: on PostgreSQL an advisory lock serialises them; on SQLite the write lock does.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

HERE = Path(__file__).resolve().parent
#: An arbitrary key for PostgreSQL's advisory lock ("colbench" in ASCII, as an int).
_LOCK_KEY = 0x636F6C62656E6368


def alembic_config():  # type: ignore[no-untyped-def]
    """An alembic ``Config`` pointing at this folder."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(HERE))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    config = alembic_config()
    with engine.connect() as connection:
        connection.execution_options(colbench_write=True)
        with connection.begin():
            if engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                   {"key": _LOCK_KEY})
            config.attributes["connection"] = connection
            command.upgrade(config, revision)

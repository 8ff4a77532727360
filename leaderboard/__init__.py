"""The colbench leaderboard: a self-hostable service that verifies what it is sent.

>>> from colbench.leaderboard import create_app          # doctest: +SKIP
>>> app = create_app("sqlite:///leaderboard.db")        # doctest: +SKIP

The server needs ``pip install 'colbench[leaderboard]'`` (Flask, SQLAlchemy, Alembic,
psycopg). The client (:mod:`colbench.leaderboard.client`, used by ``colbench submit``) needs
nothing beyond colbench itself, so this package imports the server's parts only when asked.
"""

from __future__ import annotations

import importlib
from typing import Any

from colbench.errors import MissingExtraError

_EXPORTS = {
    "create_app": "colbench.leaderboard.app",
    "LeaderboardSettings": "colbench.leaderboard._settings",
    "Database": "colbench.leaderboard._db",
    "SuiteCatalog": "colbench.leaderboard.suites",
    "Suite": "colbench.leaderboard.suites",
    "VerificationWorker": "colbench.leaderboard.worker",
    "verify_run": "colbench.leaderboard.verify",
    "create_token": "colbench.leaderboard.tokens",
    "revoke_token": "colbench.leaderboard.tokens",
    "submit_run": "colbench.leaderboard.client",
    "SubmitError": "colbench.leaderboard.client",
}

__all__ = sorted(_EXPORTS)


def require_server_extra(*also: str) -> None:
    """Raise :class:`MissingExtraError` naming ``[leaderboard]`` when a server part is
    missing; ``also``: modules of the extra a command needs beyond those (``serve``: the
    WSGI server)."""
    for module in ("flask", "sqlalchemy", "alembic", *also):
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtraError("the colbench leaderboard server", "leaderboard",
                                    module) from None


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'colbench.leaderboard' has no attribute {name!r}")
    if not module.endswith(".client"):
        require_server_extra()
    return getattr(importlib.import_module(module), name)

"""The verifier does not run submitted code in a sandbox without per-job limits unless its
operator accepts the risk (``allow_weak_isolation``), and the board says why such an entry is
unverified."""

from __future__ import annotations

from typing import Any

import pytest

from colbench.errors import ConfigError
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.replay import BackendReplay
from colbench.gyms.backend.tasks import load_backend_tasks
from colbench.leaderboard import LeaderboardSettings, create_app
from colbench.leaderboard.app import EXTENSION
from colbench.leaderboard.suites import BACKEND_ENV, Suite, SuiteCatalog
from colbench.leaderboard.tokens import create_token
from colbench.sandbox import Sandbox

from .conftest import Board, submit_and_verify

REFUSAL = "not replayed: this server's code sandbox has no per-job limits"


class NoCgroupReplay(BackendReplay):
    """The backend's replay on a sandbox without per-job cgroups, as a verifier that is not
    root and has no delegated cgroup gets; made in the verification process (a pool belongs
    to the process that started it)."""

    @property
    def sandbox(self) -> Any:
        with self._lock:
            if self._sandbox is None:
                self._sandbox = Sandbox(workers=1, cgroups=False)
            return self._sandbox

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        BackendReplay.__init__(self)


def _board(db_url: str, **settings: Any) -> Board:
    catalog = SuiteCatalog([Suite(env_id=BACKEND_ENV, load_split=load_backend_tasks,
                                  env_version=BackendEnv.version, max_turns=10,
                                  replay=NoCgroupReplay())])
    app = create_app(db_url, catalog=catalog,
                     settings=LeaderboardSettings(full_split_only=False, **settings))
    state = app.extensions[EXTENSION]
    _, token = create_token(state.db, "t")
    return Board(app=app, state=state, token=token, url=db_url)


def _checks(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in result["checks"]}


def test_without_per_job_limits_the_verifier_refuses_and_the_board_says_why(db_url: str,
                                                                             runs) -> None:
    board = _board(db_url)
    try:
        result = submit_and_verify(board, runs["oracle"])
        assert result["status"] == "unverified"
        assert any(e.startswith(REFUSAL) and "allow_weak_isolation" in e
                   for e in result["errors"]), result["errors"]
        checks = _checks(result)
        assert checks["isolation"]["passed"] is False
        assert checks["isolation"]["detail"].startswith(REFUSAL)
        assert "no per-job cgroup" in checks["isolation"]["detail"]
        assert checks["replay"]["passed"] is False
        board_page = board.client.get(f"/boards/{BACKEND_ENV}?status=all").get_data(
            as_text=True)
        assert "sandbox limits per job: " + REFUSAL.replace("'", "&#39;") in board_page
        page = board.client.get(f"/submissions/{result['id']}").get_data(as_text=True)
        assert REFUSAL.replace("'", "&#39;") in page
    finally:
        board.state.db.dispose()


def test_an_operator_who_accepts_the_risk_gets_verified_entries_that_say_so(db_url: str,
                                                                            runs) -> None:
    board = _board(db_url, allow_weak_isolation=True)
    try:
        result = submit_and_verify(board, runs["oracle"])
        assert result["status"] == "verified", result["errors"]
        detail = _checks(result)["isolation"]["detail"]
        assert "no per-job limits, accepted by the server's operator" in detail
    finally:
        board.state.db.dispose()


def test_the_setting_takes_only_true_or_false() -> None:
    with pytest.raises(ConfigError, match="allow_weak_isolation must be true or false"):
        LeaderboardSettings(allow_weak_isolation="yes")

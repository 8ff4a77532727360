"""The catalog finds every suite through colbench's registries: the env (its splits, tasks,
version and budget) by env id, and the suite's replay by env id in ``registry.replays``."""

from __future__ import annotations

import pytest

from colbench import registry
from colbench.errors import EnvironmentFailure
from colbench.gyms.backend.replay import BackendReplay
from colbench.leaderboard.suites import BACKEND_ENV, Suite, SuiteCatalog
from colbench.replay import RunFacts

GUESS = "colbench-test/Guess-v0"  # the tests' own env (tests/helpers_env.py), with no replay


def test_the_backend_comes_with_its_replay_and_its_splits() -> None:
    suite = SuiteCatalog().get(BACKEND_ENV)
    assert suite is not None
    assert isinstance(suite.replay, BackendReplay)
    assert tuple(suite.splits or ()) == ("test", "train")


def test_the_operators_sandbox_reaches_the_replay() -> None:
    sandbox = object()
    suite = SuiteCatalog(sandbox=sandbox).get(BACKEND_ENV)
    assert suite is not None and isinstance(suite.replay, BackendReplay)
    assert suite.replay.sandbox is sandbox


def test_an_env_without_a_replay_is_served_for_consistency_checks_only() -> None:
    catalog = SuiteCatalog()
    suite = catalog.get(GUESS)
    assert suite is not None and suite.replay is None and suite.splits is None
    tasks = catalog.task_set(suite, "test")
    assert len(tasks) > 0 and suite.env_version is not None and suite.max_turns
    assert GUESS in catalog.known() and BACKEND_ENV in catalog.known()
    assert catalog.get("someone/Else-v9") is None


def test_a_replay_registered_for_an_env_is_found_by_its_id() -> None:
    made: list[dict] = []

    class GuessReplay:
        workers = 3

        def __init__(self, **options) -> None:
            made.append(options)

        def run_problems(self, run: RunFacts) -> list[str]:
            return []

        def check(self, task, record, run):
            raise AssertionError("not called here")

    registry.replays.register(GUESS, GuessReplay)
    try:
        suite = SuiteCatalog().get(GUESS)
        assert suite is not None and isinstance(suite.replay, GuessReplay)
        assert made == [{}]
    finally:
        registry.replays.unregister(GUESS)


def test_a_replay_that_cannot_be_made_never_lets_a_run_through_unreplayed() -> None:
    def broken(**options):
        raise ImportError("No module named 'renderer'")

    registry.replays.register(GUESS, broken)
    try:
        suite = SuiteCatalog().get(GUESS)
    finally:
        registry.replays.unregister(GUESS)
    assert suite is not None and suite.replay is not None
    with pytest.raises(EnvironmentFailure, match="the server's replay for "
                                                 "colbench-test/Guess-v0 could not be loaded: "
                                                 "ImportError: No module named 'renderer'"):
        suite.replay.check(None, None, RunFacts(env=GUESS))  # type: ignore[arg-type]


def test_given_suites_take_precedence_and_registered_envs_can_be_turned_off() -> None:
    mine = Suite(env_id=BACKEND_ENV, load_split=lambda split: None)  # type: ignore[arg-type]
    catalog = SuiteCatalog([mine], registered_envs=False)
    assert catalog.get(BACKEND_ENV) is mine
    assert catalog.get(GUESS) is None and catalog.known() == [BACKEND_ENV]

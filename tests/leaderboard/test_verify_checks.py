"""The verifier is an ordered list of named checks (issue 27): every run's, then the suite's,
which its replay decides; each check's finding is what the board shows under its label."""

from __future__ import annotations

from colbench.leaderboard.verify import CHECK_LABELS, CHECKS, Finding, checks_for, found


def test_the_checks_are_named_in_order_and_the_suites_come_from_its_replay() -> None:
    every_run = [check.name for check in CHECKS]
    assert every_run == ["task_set", "records", "versions", "split", "turn_budget",
                         "aggregates"]
    replayed = [check.name for check in checks_for(object())]  # any replay
    assert replayed == [*every_run, "isolation", "replay"] == list(CHECK_LABELS)
    assert [check.name for check in checks_for(None)] == [*every_run, "replay"]


def test_a_finding_is_passed_unless_it_has_problems_and_shows_the_first() -> None:
    assert found([], "all 5 tasks") == Finding([], "all 5 tasks", True)
    assert found(["a", "b"], "all 5 tasks") == Finding(["a", "b"], "a", False)

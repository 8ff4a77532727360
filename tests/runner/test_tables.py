"""The runner's printed tables: one line per run, nothing in a cell drives the terminal."""

from __future__ import annotations

from colbench.records import Counts, MetricSummary, Summary, TaskSetRef
from colbench.runner.tables import render_table, summaries_table


def test_a_summarys_names_cannot_drive_the_terminal_or_break_a_row():
    # A summary.json anyone may have written: the model's name paints a fake green PASSED,
    # clears the screen and starts a new row.
    summary = Summary(env="colbench/Backend-v0", model="m\x1b[2J\x1b[32mPASSED\x1b[0m\nfake",
                      task_set=TaskSetRef(name="t", hash="h"),
                      counts=Counts(episodes=1, ok=1, error=0), colbench_version="0",
                      metrics={"score": MetricSummary(mean=0.5, ci95=(0.1, 0.9), n=1)})
    # details=True: cells at full length (the default table shortens long cells to fit).
    table = summaries_table([("runs/\x9b2Ja", summary)], details=True)
    assert "\x1b" not in table and "\x9b" not in table
    lines = table.splitlines()
    assert len(lines) == 3  # header, rule, one row
    assert "m\\x1b[2J\\x1b[32mPASSED\\x1b[0m\\nfake" in lines[2]
    assert lines[2].startswith("runs/\\x9b2Ja")
    # Columns line up on what is shown, not on the raw text.
    assert lines[0].index("model") == lines[2].index("m\\x1b")


def test_plain_cells_are_unchanged():
    assert render_table(["a", "bb"], [["1", "2"]]) == "a  bb\n-  --\n1  2 "

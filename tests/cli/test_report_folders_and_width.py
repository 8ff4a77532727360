"""``colbench report`` takes a folder of runs as ``view`` does, fits its table in 120
columns (long paths shortened in the middle, details under -v), and prints pass@k when tasks
ran more than once (issue 26)."""

from __future__ import annotations

from cli.conftest import make_run
from colbench.cli.main import main
from colbench.runner import EvalConfig, evaluate
from colbench.runner.tables import shorten_middle


def table_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_a_folder_of_runs_reports_every_run_below_it(tmp_path, capsys, guess_env_id):
    root = tmp_path / "runs"
    make_run(root / "a" / "asker", guess_env_id, "scripted:asker", 2)
    make_run(root / "b" / "deeper" / "no-ask", guess_env_id, "scripted:no-ask", 2)
    assert main(["report", str(root), "-v"]) == 0
    rows = table_lines(capsys)[2:]
    assert [row.split()[0] for row in rows] == [str(root / "a" / "asker"),
                                                str(root / "b" / "deeper" / "no-ask")]


def test_the_table_fits_120_columns_and_keeps_both_ends_of_a_long_path(tmp_path, capsys,
                                                                      guess_env_id):
    deep = tmp_path.joinpath(*[f"a-rather-long-folder-name-{i}" for i in range(4)], "final-run")
    make_run(deep, guess_env_id, "scripted:asker", 2)
    assert main(["report", str(deep)]) == 0
    lines = table_lines(capsys)
    assert max(len(line) for line in lines) <= 120
    label = lines[2].split()[0]
    assert "..." in label and label.endswith("final-run") and label.startswith(str(tmp_path)[:8])
    assert "turns" not in lines[0]  # a detail
    assert main(["report", str(deep), "-v"]) == 0
    lines = table_lines(capsys)
    assert lines[2].startswith(str(deep)) and "turns" in lines[0]


def test_pass_at_k_prints_when_tasks_ran_more_than_once(tmp_path, capsys, guess_env_id):
    out = tmp_path / "run"
    evaluate(EvalConfig(env=guess_env_id, model="scripted:random", out=out, num_tasks=3,
                        trials=3, progress=False))
    assert main(["report", str(out)]) == 0
    header = table_lines(capsys)[0]
    assert "pass@3 %" in header
    single = make_run(tmp_path / "single", guess_env_id, "scripted:asker", 2)
    assert main(["report", str(single)]) == 0
    assert "pass@" not in table_lines(capsys)[0]


def test_shorten_middle():
    assert shorten_middle("abcdefghij", 20) == "abcdefghij"
    assert shorten_middle("abcdefghijklmnop", 9) == "abc...nop"
    assert len(shorten_middle("x" * 300, 24)) == 24

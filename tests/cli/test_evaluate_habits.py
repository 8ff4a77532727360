"""The habits users bring from inspect_ai and lm-eval: ``--limit`` (``--num-tasks`` kept),
``--log-dir`` (``--out``), ``-V``, ``--overwrite``, extending a run to more tasks or trials,
a warning when ``--limit`` is capped, no progress frames off a terminal, Ctrl-C's resume line
and shell completion."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from colbench import __version__
from colbench.cli.main import main
from colbench.rundir import RunDir


def _evaluate(guess_env_id, out, *flags):
    return main(["evaluate", guess_env_id, "--model", "scripted:asker", "--out", str(out),
                 "--no-progress", "--concurrency", "2", *flags])


def _episode_keys(out):
    return [(r.task_id, r.trial) for r in RunDir(out).read_episodes()]


def test_limit_and_its_alias_num_tasks_and_log_dir_name_the_same_run(tmp_path, guess_env_id,
                                                                    capsys):
    out = tmp_path / "run"
    assert main(["evaluate", guess_env_id, "--model", "scripted:asker", "--limit", "3",
                 "--log-dir", str(out), "--no-progress"]) == 0
    assert len(_episode_keys(out)) == 3
    # The same run under the old names: resumed, nothing redone.
    assert main(["evaluate", guess_env_id, "--model", "scripted:asker", "--num-tasks", "3",
                 "--out", str(out), "--no-progress"]) == 0
    assert len(_episode_keys(out)) == 3


def test_dash_capital_v_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["-V"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"colbench {__version__}"


def test_extending_a_run_to_more_tasks_then_more_trials_redoes_nothing(tmp_path, guess_env_id,
                                                                       capsys):
    out = tmp_path / "run"
    assert _evaluate(guess_env_id, out, "--limit", "2") == 0
    first = _episode_keys(out)
    assert _evaluate(guess_env_id, out, "--limit", "4") == 0
    keys = _episode_keys(out)
    assert keys[:2] == first and len(keys) == len(set(keys)) == 4
    summary = RunDir(out).load_summary()
    assert summary.task_set.count == 4
    assert _evaluate(guess_env_id, out, "--limit", "4", "--trials", "2") == 0
    keys = _episode_keys(out)
    assert len(keys) == len(set(keys)) == 8 and {k[1] for k in keys} == {0, 1}
    identity = RunDir(out).stored_identity()
    assert identity["trials"] == 2 and identity["task_set"]["name"].endswith("[:4]")
    # No limit at all: every task of the set, still an extension.
    assert _evaluate(guess_env_id, out, "--trials", "2") == 0
    assert len(_episode_keys(out)) == 40


@pytest.mark.parametrize("flags, needle", [
    (["--limit", "2"], "task set guess-test[:2] now, guess-test[:3] there"),  # fewer tasks
    (["--limit", "3", "--trials", "1"], "trials 1 now, 2 there"),   # fewer trials
    (["--limit", "5", "--seed", "1"], "seed 1 now, 0 there"),       # more tasks, another seed
    (["--limit", "5", "--temperature", "0.5"], "temperature 0.5 now, 0.0 there"),
])
def test_only_growth_extends_a_run_anything_else_is_refused(tmp_path, guess_env_id, capsys,
                                                            flags, needle):
    out = tmp_path / "run"
    assert _evaluate(guess_env_id, out, "--limit", "3", "--trials", "2") == 0
    capsys.readouterr()
    before = (out / "episodes.jsonl").read_bytes()
    assert _evaluate(guess_env_id, out, *flags) == 2
    err = capsys.readouterr().err
    assert "holds a different run: " in err and needle in err
    assert "only more tasks or more trials may extend it" in err
    assert "pass --overwrite to delete it and start again, or choose a new --out" in err
    assert "{" not in err and "sha256" not in err  # words, not a dump of dicts and hashes
    assert (out / "episodes.jsonl").read_bytes() == before


def test_an_extension_removes_the_smaller_runs_summary_until_it_finishes(tmp_path, guess_env_id,
                                                                          monkeypatch, capsys):
    out = tmp_path / "run"
    assert _evaluate(guess_env_id, out, "--limit", "2") == 0
    assert RunDir(out).has_summary()

    def interrupted(config, model=None, hooks=()):
        from colbench.runner.evaluate import Runner

        runner = Runner(config, model=model, hooks=hooks)
        try:
            runner._prepare_out()
        finally:
            runner.close()
        raise KeyboardInterrupt

    import colbench.runner

    monkeypatch.setattr(colbench.runner, "evaluate", interrupted)
    assert _evaluate(guess_env_id, out, "--limit", "4") == 130
    run = RunDir(out)
    assert not run.has_summary()  # the old one described 2 tasks
    summary, partial = run.summary()
    assert partial and summary.task_set.name == "guess-test[:4]"


def test_overwrite_starts_again_and_refuses_resume_with_it(tmp_path, guess_env_id, capsys):
    out = tmp_path / "run"
    assert _evaluate(guess_env_id, out, "--limit", "3") == 0
    (out / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert _evaluate(guess_env_id, out, "--limit", "2", "--seed", "5", "--overwrite") == 0
    assert (f"--overwrite: deleted the run in {out} (3 episode(s); run.json, episodes.jsonl, "
            "summary.json)") in capsys.readouterr().err
    assert len(_episode_keys(out)) == 2
    assert RunDir(out).stored_identity()["seed"] == 5
    assert (out / "notes.txt").read_text() == "mine"  # only the run's own files go
    capsys.readouterr()
    assert _evaluate(guess_env_id, out, "--resume", "--overwrite") == 2
    assert "pass one of them" in capsys.readouterr().err


def test_a_limit_above_the_sets_size_warns(tmp_path, guess_env_id, caplog):
    with caplog.at_level(logging.WARNING, logger="colbench.runner.evaluate"):
        assert _evaluate(guess_env_id, tmp_path / "run", "--limit", "25") == 0
    assert "--limit 25 asks for more tasks than guess-test has: running all 20" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="colbench.runner.evaluate"):
        assert _evaluate(guess_env_id, tmp_path / "run2", "--limit", "20") == 0
    assert "asks for more tasks" not in caplog.text


def test_the_progress_bar_stays_off_a_pipe(run_cli, guess_env_id, tmp_path):
    result = run_cli(["evaluate", guess_env_id, "--model", "scripted:asker", "--limit", "3",
                      "--out", str(tmp_path / "run")])
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr and "ep/s" not in result.stderr


def test_ctrl_c_prints_the_command_that_resumes(tmp_path, guess_env_id, monkeypatch, capsys):
    import colbench.runner

    def interrupt(config, model=None, hooks=()):
        raise KeyboardInterrupt

    monkeypatch.setattr(colbench.runner, "evaluate", interrupt)
    code = main(["evaluate", guess_env_id, "--model", "scripted:asker", "--limit", "3",
                 "--overwrite", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 130
    assert "interrupted; the finished episodes are saved in runs/" in err
    assert (f"colbench evaluate {guess_env_id} --model scripted:asker --limit 3 --no-progress "
            "--out runs/colbench-test_Guess-v0/scripted_asker/test") in err


def test_shell_completion_through_argcomplete(cli_environ, tmp_path):
    pytest.importorskip("argcomplete")
    answer = tmp_path / "completions"
    env = dict(cli_environ, _ARGCOMPLETE="1", COMP_LINE="colbench eva", COMP_POINT="12",
               _ARGCOMPLETE_STDOUT_FILENAME=str(answer), _ARGCOMPLETE_IFS="\n")
    result = subprocess.run([sys.executable, "-m", "colbench.cli.main"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert answer.read_text().split() == ["evaluate"]
    env["COMP_LINE"] = "colbench evaluate x --li"
    env["COMP_POINT"] = str(len(env["COMP_LINE"]))
    subprocess.run([sys.executable, "-m", "colbench.cli.main"], env=env, capture_output=True,
                   text=True, timeout=60)
    assert "--limit" in answer.read_text().split()


def test_run_json_keeps_its_format_after_an_extension(tmp_path, guess_env_id, capsys):
    out = tmp_path / "run"
    assert _evaluate(guess_env_id, out, "--limit", "2") == 0
    keys_before = set(json.loads((out / "run.json").read_text()))
    assert _evaluate(guess_env_id, out, "--limit", "3") == 0
    assert set(json.loads((out / "run.json").read_text())) == keys_before


def test_collect_takes_limit_as_well():
    from colbench.cli.main import build_parser

    for flag in ("--limit", "--num-tasks"):
        args = build_parser().parse_args(["collect", "colbench/Backend-v0", "--model",
                                          "scripted:oracle", flag, "3"])
        assert args.num_tasks == 3


@pytest.mark.parametrize("flag", ["--limit", "--num-tasks", "--limit=0"])
def test_a_bad_limit_names_the_flag_typed(tmp_path, guess_env_id, capsys, flag):
    words = [flag] if "=" in flag else [flag, "0"]
    assert main(["evaluate", guess_env_id, "--model", "scripted:asker", "--out",
                 str(tmp_path / "run"), *words]) == 2
    assert f"{flag.split('=')[0]} must be at least 1, got 0" in capsys.readouterr().err

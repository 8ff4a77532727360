"""``colbench evaluate``'s exit status says whether errors spoiled the run: too many of either
kind, or a backend that kept failing the same way, exit 1 with a message naming which."""

from __future__ import annotations

import json
import socket
import time

import pytest

from colbench.cli.main import main

RAISE_ON = {"Task 1:", "Task 3:"}


def raises_on_two_of_ten(messages):
    if any(messages[1]["content"].startswith(prefix) for prefix in RAISE_ON):
        raise ValueError("the agent's bug")
    return "ANSWER: 50"


def evaluate(tmp_path, env_id, model, *flags):
    return main(["evaluate", env_id, "--model", model, "--out", str(tmp_path / "run"),
                 "--num-tasks", "10", "--no-progress", *flags])


def test_too_many_model_errors_exit_1_naming_kind_and_count(tmp_path, guess_env_id, capsys):
    code = evaluate(tmp_path, guess_env_id, f"python:{__name__}:raises_on_two_of_ten",
                    "--max-consecutive-failures", "0")
    captured = capsys.readouterr()
    assert code == 1
    assert ("2 of 10 episodes (20%) ended in model errors (scored 0), more than "
            "--max-error-rate 0.1 allows") in captured.err
    assert "2 episode(s) ended in a model error (scored 0) and 0 in an environment error" \
        in captured.out
    header, _, row = captured.out.splitlines()[:3]
    assert header.split()[3:6] == ["episodes", "errors", "model-errors"]
    assert row.split()[3:6] == ["10", "0", "2"]
    counts = json.loads((tmp_path / "run" / "summary.json").read_text())["counts"]
    assert counts["model_errors"] == 2 and counts["ok"] == 10


def test_a_higher_threshold_lets_the_same_run_pass(tmp_path, guess_env_id, capsys):
    assert evaluate(tmp_path, guess_env_id, f"python:{__name__}:raises_on_two_of_ten",
                    "--max-error-rate", "0.2") == 0


def test_too_many_env_errors_exit_1(tmp_path, guess_env_id, capsys):
    code = evaluate(tmp_path, guess_env_id, "scripted:oracle", "--env-arg",
                    "fail_tasks=[guess-test-002, guess-test-005]")
    assert code == 1
    assert ("2 of 10 episodes (20%) ended in environment errors (not scored)"
            in capsys.readouterr().err)


@pytest.mark.parametrize("rate", ["-0.1", "1.5"])
def test_bad_rate_is_refused_before_anything_runs(tmp_path, guess_env_id, capsys, rate):
    assert evaluate(tmp_path, guess_env_id, "scripted:oracle", "--max-error-rate", rate) == 2
    assert "--max-error-rate must be between 0 and 1" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_help_documents_both_flags(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--max-error-rate RATE" in text and "model errors (scored 0)" in text
    assert "--max-consecutive-failures N" in text and "0 never stops" in text


def test_a_dead_server_ends_the_run_before_it_starts_in_one_line(tmp_path, run_cli,
                                                                 guess_env_id):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    result = run_cli(["evaluate", guess_env_id, "--model",
                      f"openai:m@http://127.0.0.1:{port}/v1?max_retries=1&backoff=0.01",
                      "--out", str(tmp_path / "run"), "--env-arg", "num_tasks=200",
                      "--concurrency", "4", "--no-progress"], timeout=60)
    assert result.returncode == 2, result.stderr
    assert time.monotonic() - started < 30
    assert result.stderr.strip().splitlines() == [
        f"colbench evaluate: error: the model server at http://127.0.0.1:{port}/v1 refused "
        "the connection: is it running? (model 'm')"]
    assert not (tmp_path / "run" / "episodes.jsonl").exists()

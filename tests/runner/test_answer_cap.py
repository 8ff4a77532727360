"""Bounded answers: a model message over the answer cap is refused before the env sees it
(the model's failure, scored 0), and what a run stores stays small."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from colbench.cli.main import main
from colbench.errors import ConfigError, ModelFailure
from colbench.models.python_fn import FunctionModel
from colbench.rundir import read_latest_episodes
from colbench.runner import EvalConfig, evaluate


def run(out: Path, env_id: str, agent, **config) -> list:
    evaluate(EvalConfig(env=env_id, model="python:test", out=out, progress=False,
                        max_consecutive_failures=0, **config),
             model=FunctionModel(agent))
    return read_latest_episodes(out)


def ask_then_send(answer: str):
    """An agent that asks once (a short message), then sends ``answer``."""
    def agent(messages):
        return "What is your number?" if len(messages) == 2 else answer
    return agent


def test_a_message_over_the_cap_is_the_models_failure(tmp_path, guess_env_id):
    (record,) = run(tmp_path / "run", guess_env_id, ask_then_send("ANSWER: 7 " + "#" * 41),
                    num_tasks=1, max_answer_chars=50)
    assert record.status == "ok" and record.failure == "model"
    assert record.metrics == {"success": False, "score": 0.0}
    # The question was played and kept; the refused message never reached the env.
    assert [t.action for t in record.turns] == ["What is your number?"]
    assert record.final_answer is None
    assert ("its message at turn 2 holds 51 characters, more than the 50 allowed "
            "(--max-answer-chars); it was refused unread. It began: 'ANSWER: 7 ###")\
        in record.error


def test_the_default_cap_is_the_envs_action_bound(tmp_path, guess_env_id):
    bound = 100_000  # the Guess env's action space, as every built-in env's
    at_bound = "ANSWER: 7 ".ljust(bound, "#")
    (kept,) = run(tmp_path / "a", guess_env_id, ask_then_send(at_bound), num_tasks=1)
    assert kept.failure is None and kept.turns[-1].action == at_bound  # stored whole
    (refused,) = run(tmp_path / "b", guess_env_id, ask_then_send(at_bound + "#"), num_tasks=1)
    assert refused.failure == "model" and "100,001 characters" in refused.error


def test_stored_texts_are_cut_but_never_an_answer_that_ran(tmp_path, guess_env_id):
    def agent(messages):
        if len(messages) == 2:
            return "What is your number? " + "?" * 300
        raise ModelFailure("the server said: " + "z" * 1_000_000)

    (record,) = run(tmp_path / "run", guess_env_id, agent, num_tasks=1,
                    max_answer_chars=400, max_record_chars=100)
    # The cap for records is raised to the answer cap: the question that ran is whole...
    assert record.turns[0].action == "What is your number? " + "?" * 300
    # ...and the model's million-character error is cut, saying by how much.
    assert record.error == ("model failed: the server said: " + "z" * 1_000_000)[:400] \
        + "…[cut 999,631 characters]"
    assert (tmp_path / "run" / "episodes.jsonl").stat().st_size < 5_000


@pytest.mark.parametrize(("field", "value"), [("max_answer_chars", 0),
                                              ("max_record_chars", -1),
                                              ("max_answer_chars", 1.5)])
def test_bad_caps_are_named(tmp_path, field, value):
    flag = "--" + field.replace("_", "-")
    with pytest.raises(ConfigError, match=f"{flag} must be a whole number of characters"):
        EvalConfig(env="e", model="m", out=tmp_path, **{field: value})


def long_reply(messages):
    return "ANSWER: 7 " + "#" * 100


def test_the_flags_reach_the_run(tmp_path, guess_env_id, capsys):
    code = main(["evaluate", guess_env_id, "--model", f"python:{__name__}:long_reply",
                 "--num-tasks", "2", "--out", str(tmp_path / "run"), "--no-progress",
                 "--max-answer-chars", "20", "--max-record-chars", "10",
                 "--max-consecutive-failures", "0", "--max-error-rate", "1"])
    assert code == 0
    assert "2 episode(s) ended in a model error (scored 0)" in capsys.readouterr().out
    # Refused at 20 characters; the error cut at 20 too (the record cap, 10, is raised to
    # the answer cap).
    assert all(r.error.startswith("model failed: its me…[cut ")
               for r in read_latest_episodes(tmp_path / "run"))
    code = main(["evaluate", guess_env_id, "--model", "scripted:oracle", "--no-progress",
                 "--out", str(tmp_path / "other"), "--max-record-chars", "0"])
    assert code == 2
    assert "--max-record-chars must be a whole number of characters, at least 1; got 0" \
        in capsys.readouterr().err


# The case: a python: agent that sends 64 MB, twice. It is refused at once, the
# evaluator holds no copy of it (its memory grows by the agent's own strings, far under
# 200 MB), and episodes.jsonl holds a few kilobytes, not 400 MB.
MEASURE = textwrap.dedent("""
    import gc, json, sys, time
    from pathlib import Path
    from colbench.envs import make
    from colbench.models.python_fn import FunctionModel
    from colbench.runner import EvalConfig, evaluate

    def kib(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])

    def agent(messages):
        # One allocation of 64 MB: what is measured beyond it is the evaluator's.
        return "I WANT TO ANSWER:\\ndef f():\\n    return 1\\n".ljust(64_000_000, "#")

    out = Path(sys.argv[1])
    make("colbench/Backend-v0").reset(seed=0)  # imports and task loading: the baseline
    gc.collect()
    baseline = kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # restart the peak (VmHWM) from here
        fh.write("5")
    started = time.monotonic()
    evaluate(EvalConfig(env="colbench/Backend-v0", model="python:big", out=out, num_tasks=2,
                        concurrency=1, progress=False), model=FunctionModel(agent))
    print(json.dumps({"seconds": time.monotonic() - started,
                      "peak_mib": (kib("VmHWM") - baseline) / 1024}))
""")


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(),
                    reason="needs Linux's /proc to measure the peak memory")
def test_a_64_mb_answer_is_refused_quickly_within_bounded_memory(tmp_path):
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-c", MEASURE, str(out)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    # Speed follows from the memory bound (no copy, no scan of the 64 MB); no wall-clock
    # assertion, since the machine's load would make it flaky.
    assert measured["peak_mib"] < 200, measured
    assert (out / "episodes.jsonl").stat().st_size < 10_000
    records = read_latest_episodes(out)
    assert len(records) == 2
    for record in records:
        assert record.failure == "model" and record.metrics["score"] == 0.0
        assert "64,000,000 characters, more than the 100,000 allowed" in record.error
        assert record.turns == []  # nothing of it reached the env or the record

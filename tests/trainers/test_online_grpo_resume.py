"""``colbench train online-grpo --resume``: a run killed mid-way (a real process, SIGKILL)
goes on from its last checkpoint and ends where an uninterrupted run ends: same step count,
same curriculum stage, the same tasks at every step; what the killed run wrote after its
checkpoint is set aside, not lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402

from colbench.errors import ConfigError  # noqa: E402
from colbench.rundir import read_episodes  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]

#: The command line's words after ``colbench train online-grpo``: 4 lockstep steps, a
#: checkpoint every 2, turn budgets 1 then 2 from step 2, cross-policy sampling with a
#: snapshot refreshed every 2 steps (so the checkpoint at step 2 holds the snapshot of
#: version 0, and the resumed run refreshes it at its first step).
FLAGS = ["--env", helpers_env.ENV_ID, "--split", "test", "--max-steps", "4", "--save-steps",
         "2", "--per-device-train-batch-size", "4", "--num-generations", "2",
         "--max-new-tokens", "4", "--learning-rate", "1e-3", "--no-overlap",
         "--horizon-stages", "1,2", "--steps-per-stage", "2", "--cross-policy-prob", "0.5",
         "--snapshot-every", "2", "--seed", "3"]

#: Runs the CLI in a child process. With HOLD set, the rollouts of step HOLD_STEP block
#: (after the checkpoint before them is written) and the file READY says so: the test then
#: kills the process there, mid-run, as a preempted job would be.
SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {tests!r})
    import helpers_env
    helpers_env.register()
    import torch
    torch.set_num_threads(1)
    from colbench.trainers import online_grpo_rollout
    hold = os.environ.get("HOLD")
    if hold:
        played = online_grpo_rollout.RolloutEngine.play
        def play(self, step, *args, **kwargs):
            if step >= int(os.environ["HOLD_STEP"]):
                open(hold, "w").write(str(step))
                while True:
                    time.sleep(1)
            return played(self, step, *args, **kwargs)
        online_grpo_rollout.RolloutEngine.play = play
    from colbench.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


def _command(script: Path, model: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, str(script), "train", "online-grpo", "--model", f"hf:{model}",
            "--out", str(out), *FLAGS, *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1",
            "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _steps(out: Path) -> dict[int, list[tuple]]:
    """Per step, what was played: (task, trial, turn budget, which policy played each turn
    position) of each sample."""
    played = {}
    for path in sorted((out / "rollouts").glob("step-*/samples.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        played[int(path.parent.name[5:])] = sorted(
            (r["task_id"], r["trial"], r["horizon"]) for r in rows)
    return played


@pytest.mark.slow
def test_killed_run_resumes_to_the_uninterrupted_end(tiny_llama, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(tests=str(TESTS)))
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    # The uninterrupted run plays beside the killed and resumed ones (each uses one thread):
    # one after the other, the three took 6 to 7 minutes on a loaded two-core machine.
    log = tmp_path / "whole.log"  # a file, not a pipe: nobody reads it until the end
    with log.open("w") as stderr:
        uninterrupted = subprocess.Popen(_command(script, tiny_llama, whole), env=_env(),
                                         stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        _kill_and_resume(script, tiny_llama, killed, tmp_path / "ready")
        uninterrupted.wait(timeout=600)
    finally:
        if uninterrupted.poll() is None:
            uninterrupted.kill()
            uninterrupted.wait()
    assert uninterrupted.returncode == 0, log.read_text()[-3000:]
    record = json.loads((killed / "colbench_train.json").read_text())
    expected = json.loads((whole / "colbench_train.json").read_text())
    assert record["metrics"]["steps"] == expected["metrics"]["steps"] == 4
    assert record["metrics"]["episodes"] == expected["metrics"]["episodes"] == 16
    # The same tasks and turn budgets (curriculum stage) at every step. (Rewards are not
    # compared: two policies sampling on two threads share torch's RNG, so even two
    # uninterrupted runs differ in what the tiny model says.)
    resumed, uninterrupted_steps = _steps(killed), _steps(whole)
    assert sorted(resumed) == list(range(4))
    assert resumed == uninterrupted_steps


def _kill_and_resume(script: Path, tiny_llama: Path, killed: Path, ready: Path) -> None:
    """Kill a run in its fourth step, check what it left, and resume it to its end."""
    child = subprocess.Popen(_command(script, tiny_llama, killed), env={
        **_env(), "HOLD": str(ready), "HOLD_STEP": "3"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ready.exists(), child.stderr.read()[-3000:] if child.poll() is not None else ""
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert sorted(p.name for p in killed.glob("checkpoint-*")) == ["checkpoint-2"]
    state = json.loads((killed / "checkpoint-2" / "colbench_online_state.json").read_text())
    assert (state["step"], state["stage"], state["horizon"], state["snapshot_version"]) == (
        2, 1, 2, 0)
    assert (killed / "checkpoint-2" / "colbench_snapshot.pt").is_file()
    assert (killed / "rollouts" / "step-000002").is_dir()  # played after the checkpoint
    assert not (killed / "rollouts" / "step-000003" / "samples.jsonl").exists()

    # The same command with --resume goes on from checkpoint-2 to step 4.
    done = subprocess.run(_command(script, tiny_llama, killed, "--resume"),
                          capture_output=True, text=True, env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    final = json.loads((killed / "trainer_state.json").read_text())["log_history"]
    # The log goes on from the checkpoint's: steps 1-2 from the killed run, 3-4 resumed.
    assert [e["step"] for e in final if "rollout/horizon" in e] == [1, 2, 3, 4]
    assert [e["rollout/horizon"] for e in final if "rollout/horizon" in e] == [1, 1, 2, 2]
    # Every step's episodes played by the snapshot say which version: 0 before the resume
    # point, 2 after (refreshed at step 2 as in the uninterrupted run).
    versions = {}
    for folder in sorted((killed / "rollouts").glob("step-*/*Guess*")):
        versions[folder.parent.name] = {t.info["policy_version"] for e in read_episodes(folder)
                                        for t in e.turns if t.info["policy"] == "snapshot"}
    assert versions["step-000001"] <= {0} and versions["step-000003"] <= {2}
    # What the killed run played after its checkpoint is kept aside, not lost.
    aside = killed / "rollouts" / "interrupted-1" / "step-000002"
    assert (aside / "samples.jsonl").is_file()


def test_resume_refuses_what_cannot_go_on(tiny_llama, tmp_path):
    from colbench.trainers import train
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig
    from colbench.trainers.online_grpo_resume import RunState, write_state

    settings = dict(envs=[helpers_env.ENV_ID], split="test", max_steps=2,
                    per_device_train_batch_size=4, num_generations=2, max_new_tokens=4,
                    overlap=False)
    out = tmp_path / "ckpt"
    out.mkdir()
    (out / "notes.txt").write_text("kept")
    with pytest.raises(ConfigError, match="holds no online-grpo checkpoint"):
        train("online-grpo", model=f"hf:{tiny_llama}", out=out,
              config=OnlineGRPOConfig(resume=True, **settings))
    with pytest.raises(ConfigError, match="pass one of them"):
        train("online-grpo", model=f"hf:{tiny_llama}", out=out, overwrite=True,
              config=OnlineGRPOConfig(resume=True, **settings))
    from colbench.trainers.online_grpo_resume import shaping_settings

    recorded = shaping_settings(OnlineGRPOConfig(**{**settings, "seed": 5}))
    write_state(out / "checkpoint-1", RunState(step=1, stage=None, horizon=None,
                                               snapshot_version=None, episodes=4,
                                               env_failures=0, settings=recorded), None)
    with pytest.raises(ConfigError, match=r"other settings: seed \(checkpoint: 5, now: 0\)"):
        train("online-grpo", model=f"hf:{tiny_llama}", out=out,
              config=OnlineGRPOConfig(resume=True, **settings))
    assert (out / "notes.txt").read_text() == "kept"

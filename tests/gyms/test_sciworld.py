"""SciWorld: splits, the Java check, error observations, JVM lifetime and the oracle."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("scienceworld", reason="SciWorld needs the [embodied] extra")

from colbench.gyms.embodied import sciworld  # noqa: E402
from colbench.gyms.embodied.sciworld_tasks import (  # noqa: E402
    SPLITS,
    check_disjoint,
    load_sciworld_tasks,
    read_variation_table,
)

import colbench  # noqa: E402,F401  (registers the env ids)

needs_java = pytest.mark.skipif(
    not (os.environ.get("JAVA_HOME") or __import__("shutil").which("java")),
    reason="ScienceWorld needs Java 17 (apt-get install -y openjdk-17-jre-headless)")
# Short tasks keep the JVM tests quick.
FAST_TASK = "sciworld/find-plant/252"


def test_splits_never_overlap_and_cover_every_task():
    table = read_variation_table()
    assert len(table["tasks"]) == 30
    check_disjoint(table)
    ids = {split: set(load_sciworld_tasks(split).ids()) for split in SPLITS}
    assert not ids["train"] & ids["dev"] and not ids["train"] & ids["test"]
    assert not ids["dev"] & ids["test"]
    # The first 30 test tasks sample every ScienceWorld task once.
    first = load_sciworld_tasks("test")[:30]
    assert len({t.privileged["task_name"] for t in first}) == 30


def test_an_overlapping_table_is_refused():
    table = {"tasks": {"boil": {"train": [1, 2], "dev": [2], "test": [3]}}}
    with pytest.raises(colbench.ConfigError, match="variation 2 is in both train and dev"):
        check_disjoint(table)


def test_missing_java_names_the_package_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(sciworld.JavaNotFoundError, match="openjdk-17-jre-headless"):
        sciworld.SciWorldEnv()


def test_extract_action():
    assert sciworld.extract_action("I should look.\nAction: `look around`") == "look around"
    assert sciworld.extract_action("open door to kitchen") == "open door to kitchen"
    assert sciworld.extract_action("\n\n") == ""


def _java_children() -> list[int]:
    """Java processes whose parent is this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"java" in cmdline:
            found.append(int(entry.name))
    return found


@needs_java
@pytest.mark.slow
def test_errors_rewards_and_no_jvm_left_after_50_resets_and_close():
    env = sciworld.SciWorldEnv(split="test")
    try:
        obs, info = env.reset(options={"task_id": FAST_TASK})
        assert "Your task is to find" in obs and "This room is called" in obs
        # Malformed and impossible actions get observations, never exceptions.
        for action in ["", "x" * 5000, "fly to the moon", "Action: eat the kitchen"]:
            obs, reward, terminated, truncated, info = env.step(action)
            assert isinstance(obs, str) and obs and reward == 0.0 and not terminated
        jvm = env._simulator._gateway.java_process
        assert _java_children() == [jvm.pid]
        for i in range(50):
            env.reset(options={"task_id": FAST_TASK if i % 2 else "sciworld/power-component/19"})
        assert _java_children() == [jvm.pid]  # one JVM per env, reused by every reset
    finally:
        env.close()
    assert jvm.poll() is not None
    assert _java_children() == []


@needs_java
@pytest.mark.slow
def test_gold_replay_rewards_sum_to_the_normalised_score():
    env = sciworld.SciWorldEnv(split="test", max_turns=100)
    try:
        env.reset(options={"task_id": FAST_TASK})
        gold = env.gold_actions()
        total = 0.0
        for action in gold:
            obs, reward, terminated, truncated, info = env.step(action)
            total += reward
            if terminated or truncated:
                break
        assert terminated and info["metrics"]["success"] is True
        assert info["raw_score"] == 100 and info["metrics"]["score"] == 1.0
        assert total == pytest.approx(1.0)
        # After the first step the gold path cannot be generated any more.
        env.reset(options={"task_id": FAST_TASK})
        env.step("look around")
        with pytest.raises(colbench.ConfigError, match="before the first step"):
            env.gold_actions()
    finally:
        env.close()


@needs_java
@pytest.mark.slow
def test_oracle_solves_30_sampled_test_variations_through_the_cli(evaluate_oracle):
    # The first 30 test tasks over every ScienceWorld task but mendelian-genetics-unknown-plant,
    # whose gold path alone takes over a minute to generate. Gold paths run to 331 actions, so
    # the budget is raised: the oracle proves solvability, not speed.
    names = sorted(t for t in read_variation_table()["tasks"]
                   if t != "mendelian-genetics-unknown-plant")
    result = evaluate_oracle("colbench/SciWorld-v0", "--split", "test", "--num-tasks", "30",
                             "--max-turns", "400", "--concurrency", "2",
                             "--env-arg", f"task_names={json.dumps(names)}", timeout=900)
    episodes = result["episodes"]
    assert len(episodes) == 30
    failed = [(e["task_id"], e.get("metrics"), e.get("error")) for e in episodes
              if e["status"] != "ok" or not e["metrics"]["success"]]
    assert not failed

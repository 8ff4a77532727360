"""SciWorld: splits, the Java check, error observations, JVM lifetime and the oracle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("scienceworld", reason="SciWorld needs the [embodied] extra")

import colbench  # noqa: E402,F401  (registers the env ids)
from colbench.gyms.embodied import sciworld  # noqa: E402
from colbench.gyms.embodied.sciworld_tasks import (  # noqa: E402
    DEFAULT_TURN_BUDGET,
    MIN_TURN_BUDGET,
    SPLITS,
    TURN_BUDGETS,
    check_disjoint,
    load_sciworld_tasks,
    read_gold_table,
    read_variation_table,
    turn_budget,
)
from colbench.tasks import TaskSet  # noqa: E402

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


def test_gold_sample_ships_with_the_first_test_tasks():
    gold = read_gold_table()
    first = load_sciworld_tasks("test")[:40]
    assert set(gold) == {t.id for t in first}
    assert all(t.privileged["gold_actions"] == gold[t.id] for t in first)


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


@pytest.mark.parametrize("reply", [
    "Action: open door to kitchen",
    "Thought:\nThe kitchen is next door.\n\nAction:\nopen door to kitchen",
    "The kitchen is next door.\n```\nopen door to kitchen\n```",
])
def test_every_answer_form_is_one_command(reply):
    assert sciworld.extract_action(reply) == "open door to kitchen"


def test_the_prompt_lists_the_commands_task_types_need():
    prompt = sciworld.system_prompt_text(30)
    for template in ("connect OBJ to OBJ", "disconnect OBJ", "examine OBJ", "eat OBJ",
                     "flush OBJ", "dunk OBJ in OBJ", "use OBJ on OBJ", "focus on OBJ"):
        assert f"- {template}:" in prompt
    assert "number" in prompt  # the simulator's questions of which object was meant
    assert "You have 30 actions." in prompt


def test_every_command_of_the_shipped_gold_paths_has_a_form_in_the_prompt():
    # The words before a template's first placeholder start every command of that form.
    heads = sorted((t.split(" OBJ")[0].split(" LOCATION")[0] for t, _ in sciworld.ACTIONS),
                   key=len, reverse=True)
    unlisted = {action for actions in read_gold_table().values() for action in actions
                if not action.isdigit()
                and not any(action == h or action.startswith(h + " ") for h in heads)}
    assert not unlisted


def test_every_task_type_has_a_budget_that_its_shipped_gold_path_fits():
    names = set(read_variation_table()["tasks"])
    assert set(TURN_BUDGETS) == names
    assert all(budget >= MIN_TURN_BUDGET for budget in TURN_BUDGETS.values())
    for task_id, gold in read_gold_table().items():
        name = task_id.split("/")[1]
        assert len(gold) <= turn_budget(name), task_id
    assert turn_budget("no-such-task") == DEFAULT_TURN_BUDGET


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
def test_errors_rewards_and_no_jvm_left_after_10_resets_and_close():
    env = sciworld.SciWorldEnv(split="test")
    try:
        obs, info = env.reset(options={"task_id": FAST_TASK, "max_turns": 4})
        assert "Your task is to find" in obs and "This room is called" in obs
        # Malformed and impossible actions get observations, never exceptions.
        for action in ["", "x" * 5000, "fly to the moon", "Action: eat the kitchen"]:
            obs, reward, terminated, truncated, info = env.step(action)
            assert isinstance(obs, str) and obs and reward == 0.0 and not terminated
        # The turn budget ran out: truncated (not a verdict of the task), scored as it stands.
        assert truncated and info["metrics"]["success"] is False
        assert info["metrics"]["failed"] is False and info["metrics"]["turns"] == 4
        jvm = env._simulator._gateway.java_process
        assert _java_children() == [jvm.pid]
        # Ten resets, alternating two task types, show the reuse as well as fifty did.
        for i in range(10):
            env.reset(options={"task_id": FAST_TASK if i % 2 else "sciworld/power-component/19"})
        assert _java_children() == [jvm.pid]  # one JVM per env, reused by every reset
    finally:
        env.close()
    assert jvm.poll() is not None
    assert _java_children() == []


@needs_java
def test_the_prompt_covers_every_action_template_of_the_simulator_and_budgets_apply():
    env = sciworld.SciWorldEnv(split="test")
    try:
        _, info = env.reset(options={"task_id": FAST_TASK})
        # The per-type budget is the episode's, and the prompt says it.
        assert info["max_turns"] == turn_budget("find-plant")
        assert f"You have {turn_budget('find-plant')} actions." in info["system_prompt"]
        assert env.max_turns == max(TURN_BUDGETS.values())
        # The simulator's own templates ("go OBJ" is written "go to LOCATION").
        templates = set(env.simulator.get_possible_actions()) - {"reset task"}
        listed = {t.replace("LOCATION", "OBJ").replace("go to OBJ", "go OBJ")
                  for t, _ in sciworld.ACTIONS}
        assert templates <= listed, templates - listed
        _, info = env.reset(options={"task_id": FAST_TASK, "max_turns": 4})
        assert info["max_turns"] == 4
    finally:
        env.close()
    fixed = sciworld.SciWorldEnv(split="test", max_turns=7)
    try:
        _, info = fixed.reset(options={"task_id": "sciworld/power-component/19"})
        assert info["max_turns"] == 7 and fixed.max_turns == 7
    finally:
        fixed.close()


@needs_java
@pytest.mark.slow
def test_gold_replay_rewards_sum_to_the_normalised_score():
    # A variation outside the shipped sample: its gold path is generated on demand.
    fresh = next(t.id for t in load_sciworld_tasks("test")
                 if t.privileged["task_name"] == "find-plant" and "gold_actions" not in t.privileged)
    env = sciworld.SciWorldEnv(split="test", max_turns=100)
    try:
        env.reset(options={"task_id": fresh})
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
        env.reset(options={"task_id": fresh})
        env.step("look around")
        with pytest.raises(colbench.ConfigError, match="before the first step"):
            env.gold_actions()
    finally:
        env.close()


@needs_java
@pytest.mark.slow
def test_oracle_solves_30_sampled_test_variations_through_the_cli(evaluate_oracle, tmp_path):
    # The sample: the first test tasks (every ScienceWorld task in turn), whose gold paths ship
    # with colbench, but mendelian-genetics-unknown-plant, whose 150 slow steps alone take half
    # a minute. Gold paths run to hundreds of actions, so the turn budget is raised: the oracle
    # proves that the tasks are solvable, not that they fit 30 turns.
    sample = [t for t in load_sciworld_tasks("test")
              if "gold_actions" in t.privileged
              and t.privileged["task_name"] != "mendelian-genetics-unknown-plant"][:30]
    assert len(sample) == 30 and len({t.privileged["task_name"] for t in sample}) == 29
    path = TaskSet("sciworld-oracle-sample", sample).save(tmp_path / "sample.jsonl")
    longest = max(len(t.privileged["gold_actions"]) for t in sample)
    result = evaluate_oracle("colbench/SciWorld-v0", "--tasks", str(path),
                             "--max-turns", str(longest + 1), "--concurrency", "2", timeout=900)
    episodes = result["episodes"]
    assert len(episodes) == 30
    failed = [(e["task_id"], e.get("metrics"), e.get("error")) for e in episodes
              if e["status"] != "ok" or not e["metrics"]["success"]]
    assert not failed


@needs_java
@pytest.mark.parametrize("protocol", ["colbench", "agentgym"])
def test_an_action_with_a_lone_surrogate_is_refused_as_the_agents_not_the_envs(protocol):
    # A lone surrogate (a model's JSON may decode to one) cannot be sent to the JVM as
    # UTF-8: py4j failed and the step raised EnvironmentFailure, so the agent's bad input
    # was recorded as an environment error.
    split = "test" if protocol == "colbench" else "0-0"
    env = sciworld.SciWorldEnv(split=split, protocol=protocol)
    try:
        env.reset(options={"task_id": env.tasks[0].id})
        observation, reward, terminated, _, _ = env.step("Action: look at \ud800")
        assert reward == 0.0 and not terminated
        assert "not valid Unicode" in observation or observation.startswith("Invalid Action.")
        observation, *_ = env.step("Action: look around")  # the simulator still answers
        assert "This room is called" in observation or "room" in observation.lower()
    finally:
        env.close()

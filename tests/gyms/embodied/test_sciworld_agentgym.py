"""SciWorld under ``--protocol agentgym``: the task list follows AgentGym's rule (23 task
types in ScienceWorld's id order, every variation in index order), the ReAct parser reads
everything after the last label, and an episode written in AgentGym's format replays with
its running scores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("scienceworld")

from colbench.errors import ConfigError  # noqa: E402
from colbench.gyms.embodied import sciworld_agentgym as agentgym  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "agentgym_sciworld_episodes.json"
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="SciWorld needs Java 17")


def test_task_indices_follow_agentgyms_rule() -> None:
    from scienceworld.constants import ID2TASK

    tasks = agentgym.load_agentgym_tasks("all")
    kept = [name for task_id, name in ID2TASK.items()
            if task_id not in agentgym.EXCLUDED_TASK_IDS]
    assert len(kept) == 23 and "grow-plant" not in kept and "melt" in kept
    # Types in id order, each with its variations 0..n-1 in order.
    pairs = [(t.privileged["task_name"], t.privileged["variation"]) for t in tasks]
    assert [name for name, _ in pairs] == sorted((n for n, _ in pairs), key=kept.index)
    for name in kept:
        variations = [v for n, v in pairs if n == name]
        assert variations == list(range(len(variations))) and variations
    assert [t.id for t in tasks][:3] == ["sciworld/agentgym-0", "sciworld/agentgym-1",
                                         "sciworld/agentgym-2"]
    assert [t.metadata["data_idx"] for t in agentgym.load_agentgym_tasks("test")] == \
        list(range(200))
    with pytest.raises(ConfigError, match="agentgym"):
        agentgym.load_agentgym_tasks("train")


def test_the_react_parser_reads_everything_after_the_last_label() -> None:
    assert agentgym.react_action("Thought:\nx\n\nAction:\nopen door to kitchen\n") == \
        "open door to kitchen"
    assert agentgym.react_action("Action: a\nThought: no\nAction: go to\nkitchen") == \
        "go to\nkitchen"
    assert agentgym.react_action("no label at all") == ""


@needs_java
@pytest.mark.parametrize("episode", json.loads(FIXTURE.read_text()), ids=lambda e: e["item_id"])
def test_an_agentgym_episode_replays_with_its_running_scores(episode) -> None:
    from scienceworld import ScienceWorldEnv as Upstream

    from colbench.gyms.embodied.sciworld import SciWorldEnv

    index = int(episode["item_id"].removeprefix("sciworld_"))
    env = SciWorldEnv(split=f"{index}-{index}", protocol="agentgym")
    try:
        first, info = env.reset(options={"task_id": agentgym.task_id(index)})
        assert info["max_turns"] == 30 and env.describe()["protocol"] == "agentgym"
        description, look = first.split("\n", 1)
        assert description.startswith("Your task is") and look.startswith("This room is")
        assert env.simulator.envStepLimit == Upstream.__init__.__defaults__[-1] == 100
        rewards, ended = [], False
        for message in episode["conversations"][1::2]:
            assert not ended
            _, reward, terminated, truncated, info = env.step(message["value"])
            rewards.append(reward)
            ended = terminated or truncated
        assert rewards == episode["rewards"] and ended
        assert info["metrics"]["success"] is True and info["metrics"]["raw_score"] == 100
    finally:
        env.close()

"""BabyAI under ``--protocol agentgym``: episodes written in AgentGym's trajectory format
replay with every observation and reward, index i plays AgentGym's level variant i mod 40
with seed i div 40, and the oracle solves a sample within the 20-turn budget."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

pytest.importorskip("minigrid")

from colbench.errors import ConfigError  # noqa: E402
from colbench.gyms.embodied.babyai import agentgym  # noqa: E402
from colbench.gyms.embodied.babyai.env import BabyAIEnv  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "agentgym_babyai_episodes.json"
warnings.filterwarnings("ignore", message=".*out of date.*")


@pytest.fixture(scope="module")
def env():
    made = BabyAIEnv(split="0-79", protocol="agentgym")
    yield made
    made.close()


@pytest.mark.parametrize("episode", json.loads(FIXTURE.read_text()),
                         ids=lambda e: e["item_id"])
def test_agentgym_episodes_replay_with_their_observations_and_rewards(env, episode) -> None:
    index = int(episode["item_id"].removeprefix("babyai_"))
    first, _ = env.reset(options={"task_id": agentgym.task_id(index)})
    conversation = episode["conversations"]
    assert first == conversation[0]["value"]
    messages, replies = conversation[1::2], conversation[2::2]
    rewards, ended = [], False
    for turn, (message, expected) in enumerate(zip(messages, replies, strict=True), 1):
        assert not ended, f"the episode ended before turn {turn}"
        observation, reward, terminated, truncated, info = env.step(message["value"])
        assert observation == expected["value"], f"turn {turn}"
        rewards.append(round(reward, 3))
        ended = terminated or truncated
    assert rewards == episode["rewards"]
    assert ended and info["metrics"]["success"] is True
    assert info["metrics"]["score"] == pytest.approx(episode["reward"], abs=1e-3)


def test_index_i_plays_variant_i_mod_40_with_seed_i_div_40() -> None:
    assert len(agentgym.LEVELS) == 40
    # AgentGym's fixed variants where colbench's default ids differ (three of the 17).
    for variant in ("GoToObjS6", "OneRoomS20", "PutNextS7N4Carrying"):
        assert variant in agentgym.LEVELS
    tasks = agentgym.load_agentgym_tasks("0-85")
    for index, task in enumerate(tasks):
        assert task.id == f"babyai/agentgym-{index}"
        assert task.metadata["level"] == agentgym.LEVELS[index % 40]
        assert task.privileged["seed"] == index // 40
    assert tasks[3].privileged["level"] == "BabyAI-GoToObjS6-v1"  # v0 retired by minigrid
    assert tasks[32].privileged["level"] == "BabyAI-OneRoomS20-v0"
    assert [t.metadata["data_idx"] for t in agentgym.load_agentgym_tasks("test")] == \
        list(range(90))


def test_agentgym_errors_are_named() -> None:
    with pytest.raises(ConfigError, match="agentgym"):
        agentgym.load_agentgym_tasks("train")
    with pytest.raises(ConfigError, match="no levels"):
        BabyAIEnv(protocol="agentgym", levels=["GoTo"])
    with pytest.raises(ConfigError, match="no protocol"):
        BabyAIEnv(protocol="sweet-rl")


def test_every_observation_lists_the_available_actions_and_the_budget_is_20(env) -> None:
    observation, info = env.reset(options={"task_id": agentgym.task_id(7)})
    assert info["max_turns"] == 20 and env.describe()["protocol"] == "agentgym"
    assert observation.startswith("Your goal: ")
    for _ in range(3):
        assert '\nAvailable actions: ["turn left", "turn right"' in observation
        observation, *_ = env.step("Action:\nturn left")


def test_a_toggle_and_go_through_that_opens_the_goal_door_is_not_a_success(env) -> None:
    # AgentGym keeps the last primitive's reward: the step through the door after the
    # toggle that finished "open the red door" reports none, so the episode goes on.
    env.reset(options={"task_id": agentgym.task_id(12)})
    observation, reward, terminated, *_ = env.step("Action: toggle and go through red closed door 1")
    assert not terminated and reward == 0.0 and "red open door" not in observation.split("\n")[0]


@pytest.mark.parametrize("index", [0, 3, 8, 9, 10, 12, 18, 19, 30, 32])
def test_the_oracle_solves_a_sample_within_the_budget(env, index) -> None:
    env.reset(options={"task_id": agentgym.task_id(index)})
    oracle = env.scripted_agent("oracle")
    while True:
        _, _, terminated, truncated, info = env.step(oracle.act([]))
        if terminated or truncated:
            break
    assert info["metrics"]["success"] and info["metrics"]["turns"] <= 20


def test_an_agentgym_episode_replays_clean_under_its_protocol(env) -> None:
    from replay_helpers import play

    from colbench.gyms.embodied.replay import BabyAIReplay
    from colbench.replay import RunFacts

    task = env.tasks.get(agentgym.task_id(12))
    record = play(env, ["Action:\ngo to red closed door 1", "Action:\ntoggle"],
                  env_id="colbench/BabyAI-v0", options={"task_id": task.id})
    assert record.metrics["success"] is True
    run = RunFacts(env="colbench/BabyAI-v0", protocol="agentgym")
    clean = BabyAIReplay().check(task, record, run)
    assert clean.problems == [] and clean.metrics == record.metrics


def test_a_path_search_for_an_enclosed_cell_reports_no_path() -> None:
    # AgentGym's search re-queues states, so an unreachable cell can make it run for ever;
    # ours stops after MAX_SEARCH_POPS states and reports no path.
    goal = (3, 3)
    walls = [agentgym._Seen("grey wall", (goal[0] + dx, goal[1] + dy), 1)
             for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))]
    path = agentgym._find_path((0, 0), goal, walls, [], 0, range(0, 7), range(0, 7),
                               arrive=True)
    assert path is None
    assert agentgym._find_path((0, 0), (2, 0), walls, [], 0, range(0, 7), range(0, 7),
                               arrive=True) == [agentgym.FORWARD, agentgym.FORWARD]


@pytest.mark.parametrize("index", [50, 68])
def test_oracle_episodes_end_when_played_off_the_main_thread(monkeypatch, index) -> None:
    # The runner plays episodes in worker threads. There, indices 50 (GoToObjDoor) and 68
    # (UnlockToUnlock) never ended: minigrid's bot replans for ever in some lookahead
    # states, and the rollout's time limit was a timer signal, which holds in the main
    # thread only. The bound now sits in the bot's own planning, so it holds in any thread.
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(agentgym.AgentGymOracle, "ROLLOUT_MAX_STATES", 5_000)
    made = BabyAIEnv(split=f"{index}-{index}", protocol="agentgym")

    def play() -> dict:
        made.reset(options={"task_id": agentgym.task_id(index)})
        oracle = made.scripted_agent("oracle")
        while True:
            _, _, terminated, truncated, info = made.step(oracle.act([]))
            if terminated or truncated:
                return info

    with ThreadPoolExecutor(1) as pool:
        # The limit only turns a hang into a failure; the episode takes seconds.
        info = pool.submit(play).result(timeout=300)
    made.close()
    assert info["metrics"]["turns"] <= 20


def test_a_bounded_bot_gives_up_once_its_states_are_spent() -> None:
    made = BabyAIEnv(split="68-68", protocol="agentgym")
    made.reset(options={"task_id": agentgym.task_id(68)})
    bot = agentgym.bounded_bot(made.view.env, 0, 60.0)
    with pytest.raises(agentgym.RolloutGaveUp):
        bot.replan()
    roomy = agentgym.bounded_bot(made.view.env, 10_000, 60.0)
    assert isinstance(int(roomy.replan()), int)
    made.close()


def test_the_oracle_leaves_stdout_to_other_threads_while_it_plans(monkeypatch, capsys) -> None:
    # The oracle's rollouts swapped the process-wide sys.stdout for a buffer (to hide
    # minigrid's level-generation lines, which the env now logs instead): a line another
    # thread printed meanwhile, another episode's or the progress bar's, was lost.
    import threading

    made = BabyAIEnv(split="0-0", protocol="agentgym")
    made.reset(options={"task_id": agentgym.task_id(0)})
    original = agentgym.run_macro

    def run_macro_while_another_thread_prints(*args, **kwargs):
        printer = threading.Thread(target=print, args=("printed by another thread",))
        printer.start()
        printer.join()
        return original(*args, **kwargs)

    monkeypatch.setattr(agentgym, "run_macro", run_macro_while_another_thread_prints)
    action = made.scripted_agent("oracle").act([])
    made.close()
    assert "Action:" in action
    assert "printed by another thread" in capsys.readouterr().out

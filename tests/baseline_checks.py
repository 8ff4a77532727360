"""What every env's blind baseline must show (issue 14): it never reads privileged data, and
its score lies between 0 and the oracle's.

Blindness is checked two ways on each task. The agent is built on a :class:`Tripwire` in
place of the env, which fails the test on any attribute it is asked for, so an agent that
reached for ``task``, ``privileged()`` or hidden metadata would fail at once; and the
actions it sends must equal those of the same agent built by the env itself through
``scripted:NAME`` (the path a run takes), turn for turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colbench.baselines import BlindAgent
from colbench.models.base import EpisodeContext
from colbench.models.scripted import ScriptedModel


class Tripwire:
    """An env stand-in that fails the test on any use."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a blind baseline read env.{name}")


def play(env: Any, act: Any, task_id: str, seed: int) -> tuple[list[str], dict[str, Any]]:
    """One episode on ``task_id``, with ``act(messages) -> str`` choosing each action;
    returns the actions and the final metrics."""
    observation, info = env.reset(seed=seed, options={"task_id": task_id})
    messages = [{"role": "system", "content": info["system_prompt"]},
                {"role": "user", "content": observation}]
    actions: list[str] = []
    while True:
        action = act(list(messages))
        actions.append(action)
        observation, _, terminated, truncated, info = env.step(action)
        messages += [{"role": "assistant", "content": action},
                     {"role": "user", "content": observation}]
        if terminated or truncated:
            return actions, dict(info.get("metrics") or {})


def scripted(env: Any, name: str, task_id: str, seed: int) -> Any:
    """``scripted:NAME`` bound to this episode, as the runner binds it."""
    bound = ScriptedModel(name).bind_episode(env, EpisodeContext("test", task_id, 0, seed))
    return lambda messages: bound.generate([messages])[0].text


def check_blind_baseline(env: Any, name: str, task_ids: Sequence[str], *,
                         seed: int = 7) -> dict[str, float]:
    """Plays ``name`` and the oracle on ``task_ids``; asserts the baseline is blind (see the
    module docstring) and that its mean score and success lie in [0, the oracle's]. Returns
    both means."""
    factory = env.unwrapped.scripted_agents[name]
    assert issubclass(factory, BlindAgent) and not factory.sees_privileged
    baseline = {"score": 0.0, "success": 0.0}
    oracle = {"score": 0.0, "success": 0.0}
    for task_id in task_ids:
        actions, metrics = play(env, scripted(env, name, task_id, seed), task_id, seed)
        blind = factory(Tripwire(), seed=seed)
        blind_actions, blind_metrics = play(env, blind.act, task_id, seed)
        assert blind_actions == actions, task_id
        assert blind_metrics.get("score") == metrics.get("score"), task_id
        _, best = play(env, scripted(env, "oracle", task_id, seed), task_id, seed)
        for key in ("score", "success"):
            baseline[key] += float(metrics.get(key) or 0.0) / len(task_ids)
            oracle[key] += float(best.get(key) or 0.0) / len(task_ids)
    for key in ("score", "success"):
        assert 0.0 <= baseline[key] <= oracle[key], (name, key, baseline, oracle)
    return {"baseline_score": baseline["score"], "oracle_score": oracle["score"],
            "baseline_success": baseline["success"], "oracle_success": oracle["success"]}

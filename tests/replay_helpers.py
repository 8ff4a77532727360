"""Writing the record an honest runner would write, for the replay tests: step an env with
given actions and keep what it returned."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colbench.records import EpisodeRecord


def play(env: Any, actions: Sequence[str], *, env_id: str, options: dict[str, Any],
         seed: int | None = None) -> EpisodeRecord:
    """Reset ``env`` with ``seed`` and ``options``, step it with ``actions`` until it ends,
    and return the episode's record (trial 0)."""
    observation, _ = env.reset(seed=seed, options=options)
    turns: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    terminated = truncated = False
    for action in actions:
        reply, reward, terminated, truncated, info = env.step(action)
        turns.append({"observation": observation, "action": action, "reward": reward,
                      "next_observation": reply})
        observation = reply
        if terminated or truncated:
            break
    return EpisodeRecord(task_id=options["task_id"], trial=0, env=env_id, model="m",
                         seed=seed, status="ok", turns=turns, metrics=info.get("metrics", {}),
                         terminated=terminated, truncated=truncated,
                         final_answer=info.get("final_answer"))

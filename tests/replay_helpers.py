"""Writing the record an honest runner would write, for the replay tests: step an env with
given actions and keep what it returned."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colbench.records import EpisodeRecord
from colbench.replay import Replay, RunFacts, find_replay


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


def forgeries(honest: EpisodeRecord, failing: EpisodeRecord,
              other_action: str) -> dict[str, EpisodeRecord]:
    """The ways a hostile submitter edits records, each of which a suite's replay must name:
    a failing episode edited to success, an episode with no turns, an episode written without
    running the env (every observation invented), one edited observation (kept continuous, so
    only the env can tell), and actions that do not lead to the recorded states (every
    action replaced by ``other_action``, the rest kept)."""
    success = dict(failing.metrics, success=True, score=1.0)
    last = failing.turns[-1].model_copy(update={"reward": 1.0})
    invented = [turn.model_copy(update={"observation": f"You see room {i}.",
                                        "next_observation": f"You see room {i + 1}."})
                for i, turn in enumerate(honest.turns)]
    edited = [turn.model_copy() for turn in honest.turns]
    edited[0] = edited[0].model_copy(update={"next_observation": "You have won."})
    if len(edited) > 1:
        edited[1] = edited[1].model_copy(update={"observation": "You have won."})
    other = [turn.model_copy(update={"action": other_action}) for turn in honest.turns]
    return {
        "edited success": failing.model_copy(update={
            "metrics": success, "turns": [*failing.turns[:-1], last],
            "terminated": True, "truncated": False}),
        "no turns": honest.model_copy(update={"turns": []}),
        "written without running": honest.model_copy(update={"turns": invented}),
        "edited observation": honest.model_copy(update={"turns": edited}),
        "other actions": honest.model_copy(update={"turns": other}),
    }


def made_envs(replay: Any) -> list[Any]:
    """Every env ``replay`` makes from now on, in order (to count how often it reuses one)."""
    made: list[Any] = []
    original = replay.make_env

    def making(*args: Any) -> Any:
        env = original(*args)
        made.append(env)
        return env

    replay.make_env = making
    return made


#: Every kind of forgery :func:`forgeries` makes.
FORGERY_KINDS = ("edited success", "no turns", "written without running", "edited observation",
                 "other actions")

#: The forgeries whose replay must score as the env does: not a success.
RESCORED_AS_FAILED = ("edited success", "no turns", "other actions")


def assert_registered(env_id: str, replay_class: type) -> None:
    """``find_replay`` names ``replay_class`` for ``env_id``, and it is a :class:`Replay`."""
    assert find_replay(env_id) is replay_class
    assert isinstance(replay_class(sandbox=object()), Replay)


def assert_replays_clean(replay: Any, task: Any, records: Sequence[EpisodeRecord],
                         run: RunFacts) -> None:
    """Each honest record replays with no problem and the metrics it recorded."""
    for record in records:
        result = replay.check(task, record, run)
        assert result.problems == []
        assert result.metrics == record.metrics


def assert_forgery_named(replay: Any, task: Any, honest: EpisodeRecord, failing: EpisodeRecord,
                         run: RunFacts, kind: str, other_action: str) -> Any:
    """The forgery ``kind`` of :func:`forgeries` has problems named by ``replay``, and those
    in :data:`RESCORED_AS_FAILED` replay as no success; returns the replay's result."""
    forged = forgeries(honest, failing, other_action=other_action)[kind]
    result = replay.check(task, forged, run)
    assert result.problems, kind
    if kind in RESCORED_AS_FAILED:
        assert result.metrics["success"] is False and result.metrics["score"] < 1.0
    return result

"""Collected trajectories, and their conversion to Hugging Face ``datasets``.

A data directory is a run directory (``episodes.jsonl``, ``run.json``; see
:mod:`colbench.rundir`, which owns the format) as ``colbench collect`` or ``colbench evaluate``
writes it.
``colbench collect`` adds ``tasks.jsonl``: the tasks with their privileged data, which only a
critic may read. Three dataset layouts come out of it:

* **trajectory rows** (:func:`trajectory_dataset`): one per episode; ``messages`` is the
  conversation as the policy saw it (its opening as the protocol shaped it, observations as
  ``user`` turns, actions as ``assistant`` turns), with ``score``, ``success``, ``reward`` and the episode's metrics.
* **turn rows** (:func:`turn_dataset`): one per agent turn; ``history`` is every message the
  agent had read before acting, ``action`` its reply, ``reward`` the env's reward for it,
  ``task_id``, and the episode's outcome.
* **preference rows** (:func:`preference_dataset`): pairs of episodes of one task, in TRL's
  conversational preference format: ``prompt`` (the messages before the first agent turn),
  ``chosen`` and ``rejected`` (the rest of each conversation), with their scores.

Every layout carries the task's privileged data in its own ``privileged`` column (JSON text,
so that tasks of every suite share one Arrow schema). It never appears in ``messages``,
``history``, ``prompt``, ``chosen`` or ``rejected``: a policy trained on these columns cannot
learn from what only the simulator knows. A critic adds it to its own prompt
(:func:`privileged_text`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.protocols import opening_messages
from colbench.records import EpisodeRecord
from colbench.rundir import EPISODES_FILE, TASKS_FILE, RunDir, latest_per_key, read_episodes
from colbench.tasks import Task

Message = dict[str, str]

logger = logging.getLogger(__name__)


def episode_score(record: EpisodeRecord) -> float:
    """An episode's score: ``metrics["score"]``, else success as 0/1, else its total reward."""
    metrics = record.metrics or {}
    score = metrics.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        return float(score)
    if "success" in metrics:
        return float(bool(metrics["success"]))
    return float(sum(turn.reward for turn in record.turns))


def episode_success(record: EpisodeRecord) -> bool:
    return bool((record.metrics or {}).get("success", False))


def episode_messages(record: EpisodeRecord) -> list[Message]:
    """The conversation as the policy saw it, ending with its last action.

    It opens as the episode did (:func:`colbench.protocols.opening_messages` with the
    record's ``message_structure``: the instructions as a system message, or as a user turn
    answered by the assistant under AgentGym's protocol), so that a model trained on it
    learns the chat it is shown at evaluation. The env's reply to the last action (``"Your
    answer passed 7 of 10 tests."``) is left out: the policy never read it before acting. A
    record without turns gives the instructions alone (its first observation is not kept).

    Parameters
    ----------
    record:
        The episode.
    """
    first_observation = record.turns[0].observation if record.turns else ""
    messages = opening_messages(record.system_prompt or "", first_observation,
                                record.message_structure)
    if not record.turns:
        return messages[:-1]
    for index, turn in enumerate(record.turns):
        if index:  # the first observation is part of the opening
            messages.append({"role": "user", "content": turn.observation})
        messages.append({"role": "assistant", "content": turn.action})
    return messages


def _first_action_index(messages: Sequence[Message], record: EpisodeRecord) -> int:
    """Where the agent's first action sits in ``episode_messages(record)``: after the
    opening, whatever its structure (an instruction turn's reply is not the agent's)."""
    return len(messages) - 2 * len(record.turns) + 1


def split_episode(record: EpisodeRecord) -> tuple[list[Message], list[Message]]:
    """``(the messages before the agent's first action, the rest)`` of an episode's
    conversation (:func:`episode_messages`): the prompt a preference pair shares, and what
    each episode continued it with.

    Parameters
    ----------
    record:
        The episode.
    """
    messages = episode_messages(record)
    first_action = _first_action_index(messages, record)
    return messages[:first_action], messages[first_action:]


def privileged_text(privileged: dict[str, Any] | str | None) -> str:
    """The privileged data as text for a critic's prompt: ``key:`` then the value, per key."""
    if isinstance(privileged, str):
        privileged = json.loads(privileged) if privileged else {}
    if not privileged:
        return ""
    blocks = []
    for key in sorted(privileged):
        value = privileged[key]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                               sort_keys=True)
        blocks.append(f"{key}:\n{text}")
    return "\n\n".join(blocks)


def with_privileged(messages: Sequence[Message], privileged: dict[str, Any] | str | None,
                    ) -> list[Message]:
    """``messages`` for a critic: the privileged data appended to the system message (one is
    added when there is none). Chat templates differ on second system messages; one always
    works."""
    text = privileged_text(privileged)
    out = [dict(m) for m in messages]
    if not text:
        return out
    note = ("Hidden information about this task (the agent cannot see it):\n" + text)
    if out and out[0]["role"] == "system":
        out[0]["content"] = f"{out[0]['content']}\n\n{note}"
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


@dataclass
class TrajectoryData:
    """Episodes of one env, and the tasks they ran on (with their privileged data)."""

    env: str
    episodes: list[EpisodeRecord]
    tasks: dict[str, Task] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)
    #: Episodes left out because the environment failed (status ``error``) or had no turns.
    skipped: int = 0

    def __post_init__(self) -> None:
        if not self.episodes:
            where = ", ".join(str(s) for s in self.sources) or "the data"
            raise ConfigError(f"{where} holds no finished episodes to train on "
                              f"({self.skipped} left out: environment errors or no turns)")
        envs = {e.env for e in self.episodes}
        if len(envs) > 1:
            raise ConfigError(f"the data mixes episodes of several envs: {', '.join(sorted(envs))}")

    @classmethod
    def from_records(cls, records: Iterable[EpisodeRecord], tasks: Iterable[Task] = (), *,
                     env: str | None = None) -> TrajectoryData:
        """Data built in memory (tests, notebooks): ``ok`` episodes with turns are kept, except
        those the model's own failure cut short (their last turn is not something it said)."""
        records = list(records)
        kept = [r for r in records if r.status == "ok" and r.turns and r.failure_kind is None]
        env_id = env or (kept[0].env if kept else "")
        if env is not None:
            _check_env(kept, env, "the records")
        return cls(env=env_id, episodes=kept, tasks={t.id: t for t in tasks},
                   skipped=len(records) - len(kept))

    # -- views ----------------------------------------------------------------------------------
    def privileged(self, task_id: str) -> dict[str, Any]:
        task = self.tasks.get(task_id)
        return dict(task.privileged) if task is not None else {}

    @property
    def has_privileged(self) -> bool:
        return all(e.task_id in self.tasks for e in self.episodes)

    def by_task(self) -> dict[str, list[EpisodeRecord]]:
        groups: dict[str, list[EpisodeRecord]] = {}
        for record in sorted(self.episodes, key=lambda r: (r.task_id, r.trial)):
            groups.setdefault(record.task_id, []).append(record)
        return groups

    def successes(self) -> list[EpisodeRecord]:
        return [e for e in self.episodes if episode_success(e)]

    def describe(self) -> str:
        tasks = len({e.task_id for e in self.episodes})
        return (f"{len(self.episodes)} episodes of {self.env} on {tasks} tasks, "
                f"{len(self.successes())} successful")


def _check_env(records: Sequence[EpisodeRecord], env: str, where: str) -> None:
    others = sorted({r.env for r in records if r.env != env})
    if others:
        raise ConfigError(f"{where} holds episodes of {', '.join(others)}, not of {env}: the "
                          "data comes from another env")


def load_trajectories(paths: str | Path | Sequence[str | Path], *,
                      env: str | None = None) -> TrajectoryData:
    """Read one or more data directories (or ``episodes.jsonl`` files).

    Raises :class:`ConfigError` when a path holds no episodes, when the directories (or
    ``env``, if given) name different envs, or when ``tasks.jsonl`` does not match the
    episodes. Episodes that ended in an environment error are left out.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise ConfigError("no data directory given")
    episodes: list[EpisodeRecord] = []
    tasks: dict[str, Task] = {}
    skipped = 0
    sources: list[Path] = []
    env_of: dict[str, Path] = {}
    for raw in paths:
        path = Path(raw)
        directory = path.parent if path.is_file() else path
        episodes_path = path if path.is_file() else RunDir(path).episodes_path
        if not directory.exists():
            raise ConfigError(f"data directory {str(directory)!r} does not exist")
        if not episodes_path.is_file():
            raise ConfigError(f"{directory} has no {EPISODES_FILE}: collect data with "
                              "'colbench collect ENV --model SPEC --k K --out DIR'")
        records = list(latest_per_key(read_episodes(episodes_path)).values())
        kept = [r for r in records if r.status == "ok" and r.turns and r.failure_kind is None]
        skipped += len(records) - len(kept)
        if not kept:
            raise ConfigError(f"{episodes_path} holds no finished episodes (empty data: "
                              f"{len(records)} record(s), none usable)")
        dir_envs = {r.env for r in kept}
        if len(dir_envs) > 1:
            raise ConfigError(f"{episodes_path} mixes envs: {', '.join(sorted(dir_envs))}")
        dir_env = dir_envs.pop()
        if env is not None and dir_env != env:
            raise ConfigError(f"{directory} was collected on {dir_env}, not on {env}: the data "
                              "comes from another env")
        env_of.setdefault(dir_env, directory)
        if len(env_of) > 1:
            listing = "; ".join(f"{e} in {d}" for e, d in env_of.items())
            raise ConfigError(f"the data directories come from different envs ({listing})")
        saved = RunDir(directory).read_tasks()
        dir_tasks = {t.id: t for t in saved} if saved is not None else {}
        for task_id, task in dir_tasks.items():
            known = tasks.get(task_id)
            if known is not None and known.canonical_json() != task.canonical_json():
                raise ConfigError(f"task {task_id!r} differs between data directories (two "
                                  "task sets with one id); train on one of them")
            tasks[task_id] = task
        if dir_tasks:
            strays = sorted({r.task_id for r in kept} - set(dir_tasks))
            if strays:
                raise ConfigError(f"{directory}: episodes of task(s) {', '.join(strays[:5])} are "
                                  f"not in its {TASKS_FILE}; the files do not belong together")
        # Several directories may hold the same (task, trial) keys: trials of later ones are
        # numbered after the earlier ones', so that every episode keeps a key of its own.
        offset = max((e.trial for e in episodes), default=-1) + 1
        episodes += [r.model_copy(update={"trial": r.trial + offset}) if offset else r
                     for r in kept]
        sources.append(directory)
    env_id = next(iter(env_of))
    return TrajectoryData(env=env_id, episodes=episodes, tasks=tasks, sources=sources,
                          skipped=skipped)


def load_missing_tasks(data: TrajectoryData) -> None:
    """Fill ``data.tasks`` from the env itself, for run directories that ``colbench evaluate``
    wrote (they have no ``tasks.jsonl``). The env options come from each ``run.json``, less
    any that names code (:func:`colbench.data_specs.recorded_tasks`; a warning names them)."""
    missing = {e.task_id for e in data.episodes} - set(data.tasks)
    if not missing:
        return
    from colbench.data_specs import recorded_tasks

    for directory in data.sources:
        run_dir = RunDir(directory)
        if not run_dir.holds_run():
            continue
        identity = run_dir.stored_identity()
        # The data is data: an env option naming code is left out, and said so in one line.
        try:
            tasks, note = recorded_tasks(identity.get("env", data.env),
                                         identity.get("env_kwargs"),
                                         origin=str(run_dir.run_path))
        except Exception as exc:
            raise ConfigError(f"{directory} has no {TASKS_FILE} and its env could not be made "
                              f"to read the tasks' privileged data: {exc}") from exc
        if note is not None:
            logger.warning("%s", note)
        for task in tasks or ():
            if task.id in missing:
                data.tasks[task.id] = task
    still = sorted({e.task_id for e in data.episodes} - set(data.tasks))
    if still:
        raise ConfigError(f"no privileged data for task(s) {', '.join(still[:5])}: collect the "
                          f"data with 'colbench collect', which writes {TASKS_FILE}")


# -- pairs --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrajectoryPair:
    """Two episodes of one task; ``chosen`` scored strictly higher."""

    task_id: str
    chosen: EpisodeRecord
    rejected: EpisodeRecord


def trajectory_pairs(data: TrajectoryData, *, require_success: bool = False,
                     max_pairs_per_task: int | None = None) -> list[TrajectoryPair]:
    """Per task, the best episode against each strictly worse one (ties in the best go to the
    lowest trial number). With ``require_success``, only tasks whose best episode succeeded.
    Pairs whose opening messages differ (an env whose first observation is random) are left
    out: a preference needs one shared prompt."""
    pairs = []
    for task_id, episodes in data.by_task().items():
        ranked = sorted(episodes, key=lambda e: (-episode_score(e), e.trial))
        best = ranked[0]
        if require_success and not episode_success(best):
            continue
        prompt = split_episode(best)[0]
        task_pairs = []
        for other in ranked[1:]:
            if episode_score(other) >= episode_score(best):
                continue
            if split_episode(other)[0] != prompt:
                continue
            task_pairs.append(TrajectoryPair(task_id, best, other))
        if max_pairs_per_task is not None:
            task_pairs = task_pairs[:max_pairs_per_task]
        pairs.extend(task_pairs)
    return pairs


# -- datasets -----------------------------------------------------------------------------------

def _datasets():
    try:
        import datasets
    except ImportError as exc:
        from colbench.errors import MissingExtraError

        raise MissingExtraError("trajectory datasets", "train", "datasets") from exc
    return datasets


def _privileged_json(data: TrajectoryData, task_id: str) -> str:
    return json.dumps(data.privileged(task_id), ensure_ascii=False, sort_keys=True)


def trajectory_rows(data: TrajectoryData) -> list[dict[str, Any]]:
    rows = []
    for e in data.episodes:
        rows.append({
            "task_id": e.task_id, "trial": e.trial, "env": e.env, "model": e.model,
            "seed": e.seed, "messages": episode_messages(e), "num_turns": len(e.turns),
            "score": episode_score(e), "success": episode_success(e),
            "reward": float(sum(t.reward for t in e.turns)),
            "metrics": json.dumps(e.metrics, ensure_ascii=False, sort_keys=True, default=str),
            "privileged": _privileged_json(data, e.task_id),
        })
    return rows


def turn_rows(data: TrajectoryData) -> list[dict[str, Any]]:
    rows = []
    for e in data.episodes:
        messages = episode_messages(e)
        first_action = _first_action_index(messages, e)
        for t, turn in enumerate(e.turns):
            action_index = first_action + 2 * t
            rows.append({
                "task_id": e.task_id, "trial": e.trial, "turn": t,
                "history": messages[:action_index], "action": turn.action,
                "reward": float(turn.reward), "next_observation": turn.next_observation or "",
                "score": episode_score(e), "success": episode_success(e),
                "privileged": _privileged_json(data, e.task_id),
            })
    return rows


def preference_rows(data: TrajectoryData, pairs: Sequence[TrajectoryPair] | None = None,
                    ) -> list[dict[str, Any]]:
    rows = []
    for pair in pairs if pairs is not None else trajectory_pairs(data):
        prompt, chosen = split_episode(pair.chosen)
        _, rejected = split_episode(pair.rejected)
        rows.append({
            "task_id": pair.task_id, "prompt": prompt, "chosen": chosen, "rejected": rejected,
            "chosen_score": episode_score(pair.chosen),
            "rejected_score": episode_score(pair.rejected),
            "chosen_trial": pair.chosen.trial, "rejected_trial": pair.rejected.trial,
            "privileged": _privileged_json(data, pair.task_id),
        })
    return rows


def trajectory_dataset(data: TrajectoryData) -> Any:
    """One row per episode (see the module docs); a ``datasets.Dataset``."""
    return _datasets().Dataset.from_list(trajectory_rows(data))


def turn_dataset(data: TrajectoryData) -> Any:
    """One row per agent turn (see the module docs); a ``datasets.Dataset``."""
    return _datasets().Dataset.from_list(turn_rows(data))


def preference_dataset(data: TrajectoryData, pairs: Sequence[TrajectoryPair] | None = None,
                       ) -> Any:
    """Episode pairs in TRL's conversational preference format; a ``datasets.Dataset``.
    Without ``pairs``, :func:`trajectory_pairs` chooses them."""
    rows = preference_rows(data, pairs)
    if not rows:
        raise ConfigError(f"no preference pairs in the data ({data.describe()}): a pair needs "
                          "two episodes of one task with different scores; collect with --k 2 "
                          "or more")
    return _datasets().Dataset.from_list(rows)

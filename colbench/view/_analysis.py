"""What the viewer shows about runs: episode rows, transcripts, breakdowns, comparisons and
training curves, as JSON-ready dicts (the web layer only serialises them).

Breakdowns group episodes by what the env says about its tasks. That is the task's public
``metadata`` (the backend's ``family``, BabyAI's ``level``, SciWorld's ``task_name``...), which
the runner stores in each record (``task_metadata``). For records written before it did, it
is read from the run's own ``tasks.jsonl`` when a collection saved one, else from the env's
task set (made through the env registry from the run's recorded identity, once per run; a
recorded option that names code is left out, and the page says so: a run directory is data,
see :mod:`colbench.data_specs`). The few metrics that suites record per episode for the same
purpose (BabyAI's ``level``) count too.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from colbench.records import EpisodeRecord
from colbench.rundir import RunDir
from colbench.stats import PairedTest, mcnemar_test, paired_bootstrap
from colbench.tasks import GROUP_KEYS
from colbench.view._plots import bar_chart, histogram, line_chart
from colbench.view._runs import (
    LoadedRun,
    episode_images,
    score_of,
    shown_path,
    walk_folders,
)

#: Metadata keys that name a group of tasks, most telling first; offered whenever present.
KNOWN_GROUP_KEYS = GROUP_KEYS
#: Another scalar key is offered when its values form at most this many groups.
MAX_GROUPS = 60
#: Bins of the score histogram over [0, 1].
SCORE_BINS = 10
#: Characters of an error shown in the episode list (the transcript has all of it).
ERROR_PREVIEW_CHARS = 200

#: What one task's metadata is: key -> a scalar value.
TaskMetadata = dict[str, str | int | float | bool]


class TaskMetadataCache:
    """Each run's task metadata by task id, read once per run identity (making an env is
    far dearer than a poll). Failures leave the run without metadata and say why."""

    def __init__(self, make_env: Callable[..., Any] | None = None) -> None:
        self._make_env = make_env
        self._lock = threading.Lock()
        self._cache: dict[tuple[Path, str], tuple[dict[str, TaskMetadata], str | None]] = {}

    def get(self, run: LoadedRun) -> tuple[dict[str, TaskMetadata], str | None]:
        """``(metadata by task id, problem or None)`` for ``run``."""
        run_dir = RunDir(run.path)
        try:
            identity = run_dir.stored_identity() if run_dir.holds_run() else {}
        except ValueError as exc:
            return {}, str(exc)
        key = (run.path, json.dumps(identity, sort_keys=True, default=str))
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        found = self._read(run_dir, identity)
        with self._lock:
            self._cache[key] = found
        return found

    def _read(self, run_dir: RunDir, identity: dict[str, Any]
              ) -> tuple[dict[str, TaskMetadata], str | None]:
        note = None
        try:
            tasks = run_dir.read_tasks()
            if tasks is None:
                tasks, note = self._env_tasks(identity)
        except Exception as exc:  # an env that cannot be made here: no breakdown, no crash
            return {}, f"task metadata unavailable: {exc}"
        if tasks is None:
            return {}, note or "task metadata unavailable: the run names no env"
        from colbench.runner.evaluate import task_labels

        return {task.id: task_labels(task.metadata) for task in tasks}, note

    def _env_tasks(self, identity: dict[str, Any]) -> tuple[list[Any] | None, str | None]:
        """The tasks of the env ``run.json`` records, and the line that says what of it was
        left out because it names code (:func:`colbench.data_specs.recorded_tasks`)."""
        from colbench.data_specs import recorded_tasks

        env_id = identity.get("env")
        if not isinstance(env_id, str):
            return None, None
        tasks, note = recorded_tasks(env_id, identity.get("env_kwargs"), origin="run.json",
                                     make=self._make_env)
        if tasks is None:
            return None, f"task metadata unavailable: {note}"
        return tasks, note


def run_groups(run: LoadedRun, cache: TaskMetadataCache
               ) -> tuple[list[dict[str, str]], str | None]:
    """Each episode's group values (:func:`episode_groups`), in record order, and why task
    metadata is missing when it is. The cache is asked only when some record lacks its
    task's metadata."""
    metadata: dict[str, TaskMetadata] = {}
    problem = None
    if any(record.task_metadata is None for record in run.records):
        metadata, problem = cache.get(run)
    return [episode_groups(record, metadata) for record in run.records], problem


def episode_groups(record: EpisodeRecord, metadata: dict[str, TaskMetadata]
                   ) -> dict[str, str]:
    """The episode's group values: its task's metadata (the record's own, else
    ``metadata``'s), then the known group keys among its metrics (as text, so that ``3``
    and ``"3"`` are one group)."""
    labels = record.task_metadata
    if labels is None:
        labels = metadata.get(record.task_id, {})
    groups = {key: str(value) for key, value in labels.items()}
    for key in KNOWN_GROUP_KEYS:
        value = record.metrics.get(key)
        if key not in groups and isinstance(value, (str, int)) and not isinstance(value, bool):
            groups[key] = str(value)
    return groups


def group_keys(rows: Sequence[dict[str, str]]) -> list[str]:
    """The keys worth grouping by: the known ones present, then any other key whose values
    form between 2 and :data:`MAX_GROUPS` groups, fewer than there are episodes (so that a
    seed or an index, different for every task, is left out)."""
    values: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        for key, value in row.items():
            values[key].add(value)
    known = [key for key in KNOWN_GROUP_KEYS if key in values]
    others = sorted(key for key, seen in values.items()
                    if key not in KNOWN_GROUP_KEYS and 2 <= len(seen) <= MAX_GROUPS
                    and len(seen) < len(rows))
    return known + others


def episode_row(record: EpisodeRecord, groups: dict[str, str]) -> dict[str, Any]:
    """An episode's line in its run's episode list."""
    error = record.error or ""
    return {"task_id": record.task_id, "trial": record.trial, "status": record.status,
            "outcome": record.outcome, "failure": record.failure_kind,
            "success": bool(record.metrics.get("success")) if record.status == "ok" else None,
            "score": score_of(record), "turns": len(record.turns), "seconds": record.seconds,
            "error": error[:ERROR_PREVIEW_CHARS], "groups": groups,
            "images": len(episode_images(record))}


#: What the transcript calls an episode's instructions, by its message structure: the
#: instruction-turn protocols (AgentGym's) send them as the first user turn, not a system one.
INSTRUCTIONS_LABELS = {"system": "system prompt", "instruction-turn": "instructions (user turn)"}


def transcript(record: EpisodeRecord, image_url: Callable[[int], str],
               run_path: Path | None = None) -> dict[str, Any]:
    """One episode, all of it: every turn's observation, action, reward and reply, the
    metrics and failure, and the images as URLs (``image_url(n)`` for the n-th image of
    :func:`episode_images`), never their content. Absolute paths among the images, metrics
    and turn infos are shown relative (:func:`shown_path`, from ``run_path``)."""
    base = run_path if run_path is not None else Path.cwd()
    images = episode_images(record)
    by_turn: dict[int | None, list[dict[str, str]]] = defaultdict(list)
    for number, (path, caption, turn) in enumerate(images):
        by_turn[turn].append({"url": image_url(number), "caption": caption,
                              "path": shown_path(path, base)})
    captions: dict[str, list[str]] = defaultdict(list)
    for path, caption, _turn in images:
        captions[path].append(caption)
    turns = []
    for number, turn in enumerate(record.turns, 1):
        info = {key: _relative_paths(value, base) for key, value in turn.info.items()
                if key != "images"}
        turns.append({"turn": number, "observation": turn.observation, "action": turn.action,
                      "reward": turn.reward, "next_observation": turn.next_observation,
                      "model_seconds": turn.model_seconds, "env_seconds": turn.env_seconds,
                      "prompt_tokens": turn.prompt_tokens,
                      "completion_tokens": turn.completion_tokens, "info": info,
                      "images": by_turn.get(number, [])})
    return {"task_id": record.task_id, "trial": record.trial, "env": record.env,
            "model": record.model, "seed": record.seed, "status": record.status,
            "outcome": record.outcome, "failure": record.failure_kind,
            "error": record.error, "attempts": record.attempts,
            "system_prompt": record.system_prompt,
            "message_structure": record.message_structure,
            "instructions_label": INSTRUCTIONS_LABELS[record.message_structure],
            "final_answer": record.final_answer,
            "metrics": {key: _metric_shown(key, value, captions, base)
                        for key, value in record.metrics.items()},
            "terminated": record.terminated,
            "truncated": record.truncated, "seconds": record.seconds, "turns": turns,
            "renders": by_turn.get(None, [])}


def _metric_shown(key: str, value: Any, captions: dict[str, list[str]], base: Path) -> Any:
    """A metric as the transcript shows it: a render's path named by its role (the render is
    shown above; ``target_image`` is the target even when the final render is the same
    file), other absolute paths relative."""
    if isinstance(value, str) and value in captions:
        role = key.removesuffix("_image")
        return f"render: {role if role in captions[value] else captions[value][0]}"
    return _relative_paths(value, base)


def _relative_paths(value: Any, base: Path) -> Any:
    """``value`` with every string that is an absolute path (alone, or in a list) shown
    relative (:func:`shown_path`)."""
    if isinstance(value, str) and value.startswith("/") and "\n" not in value \
            and len(value) < 1024:
        return shown_path(value, base)
    if isinstance(value, list):
        return [_relative_paths(item, base) for item in value]
    return value


def breakdown(records: Sequence[EpisodeRecord], groups: Sequence[dict[str, str]],
              key: str | None) -> dict[str, Any]:
    """Per group of ``key`` (episodes, successes, success rate, mean score, mean turns, with
    a bar chart of success), the turns used and the score histogram, over scored episodes."""
    scored = [(r, g) for r, g in zip(records, groups, strict=True) if r.status == "ok"]
    result: dict[str, Any] = {"key": key, "keys": group_keys(list(groups)), "groups": [],
                              "plots": {}}
    if key is not None:
        members: dict[str, list[EpisodeRecord]] = defaultdict(list)
        for record, group in scored:
            members[group.get(key, "(none)")].append(record)
        for name in sorted(members, key=_natural):
            result["groups"].append(_group_row(name, members[name]))
        rows = result["groups"]
        if rows:
            result["plots"]["groups"] = bar_chart(
                [row["group"] for row in rows], [row["success_rate"] for row in rows],
                title=f"success by {key}", maximum=1.0, percent=True,
                notes=[f"(n={row['episodes']})" for row in rows])
    turn_counts = Counter(len(record.turns) for record, _ in scored)
    if turn_counts:
        span = range(min(turn_counts), max(turn_counts) + 1)
        result["turns"] = {str(n): turn_counts.get(n, 0) for n in span}
        result["plots"]["turns"] = histogram([str(n) for n in span],
                                             [turn_counts.get(n, 0) for n in span],
                                             title="turns used", x_label="turns")
    scores = [s for s in (score_of(record) for record, _ in scored) if s is not None]
    if scores:
        counts = score_histogram(scores)
        labels = [f"{i / SCORE_BINS:.1f}" for i in range(SCORE_BINS)]
        result["scores"] = dict(zip(labels, counts, strict=True))
        result["plots"]["scores"] = histogram(labels, counts, title="score distribution",
                                              x_label="score (bin start)")
    return result


def score_histogram(scores: Iterable[float]) -> list[int]:
    """Counts of scores in :data:`SCORE_BINS` equal bins over [0, 1]; 1.0 falls in the last
    bin and scores outside [0, 1] in the nearest one."""
    counts = [0] * SCORE_BINS
    for score in scores:
        counts[min(SCORE_BINS - 1, max(0, int(score * SCORE_BINS)))] += 1
    return counts


def _group_row(name: str, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    successes = sum(1 for r in records if r.metrics.get("success"))
    scores = [s for s in (score_of(r) for r in records) if s is not None]
    return {"group": name, "episodes": len(records), "successes": successes,
            "success_rate": successes / len(records) if records else None,
            "score": statistics.fmean(scores) if scores else None,
            "mean_turns": statistics.fmean(len(r.turns) for r in records) if records else None}


def _natural(text: str) -> list[Any]:
    """Sort key that puts ``level2`` before ``level10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def compare(run_a: LoadedRun, run_b: LoadedRun, *, seed: int = 0) -> dict[str, Any]:
    """Two runs on the same tasks, per (task, trial): each side's outcome and score, and
    whether success flipped (``gained``: only B succeeds; ``lost``: only A does). Episodes
    that only one run holds are listed as such; a difference of env or task set is named.
    ``tests`` holds McNemar's test on success and a paired bootstrap (seeded with ``seed``)
    on score, over the episodes scored in both runs."""
    keys = sorted(set(run_a.by_key) | set(run_b.by_key))
    rows = []
    totals: Counter[str] = Counter()
    score_pairs: list[tuple[float, float]] = []
    for key in keys:
        a, b = run_a.by_key.get(key), run_b.by_key.get(key)
        change = _change(a, b)
        totals[change] += 1
        if a is not None and b is not None:
            score_a, score_b = score_of(a), score_of(b)
            if score_a is not None and score_b is not None:
                score_pairs.append((score_a, score_b))
        rows.append({"task_id": key[0], "trial": key[1], "change": change,
                     "flipped": change in ("gained", "lost"),
                     "a": None if a is None else {"outcome": a.outcome, "score": score_of(a)},
                     "b": None if b is None else {"outcome": b.outcome, "score": score_of(b)}})
    warnings = []
    if run_a.summary is not None and run_b.summary is not None:
        if run_a.summary.env != run_b.summary.env:
            warnings.append(f"different envs: {run_a.summary.env} and {run_b.summary.env}")
        if run_a.summary.task_set.hash != run_b.summary.task_set.hash:
            warnings.append(f"different task sets: {run_a.summary.task_set.name} and "
                            f"{run_b.summary.task_set.name}")
        if run_a.summary.protocol != run_b.summary.protocol:
            warnings.append(f"different protocols: {run_a.summary.protocol} and "
                            f"{run_b.summary.protocol}")
    paired = sum(totals[c] for c in ("gained", "lost", "both succeed", "both fail"))
    tests: dict[str, Any] = {
        "success": _test_row(mcnemar_test(totals["gained"], totals["lost"], paired))}
    if score_pairs:
        tests["score"] = _test_row(paired_bootstrap([a for a, _ in score_pairs],
                                                    [b for _, b in score_pairs], seed=seed))
    return {"a": run_a.listing(), "b": run_b.listing(), "rows": rows,
            "totals": dict(totals), "warnings": warnings, "tests": tests}


def _test_row(test: PairedTest) -> dict[str, Any]:
    return {"method": test.method, "n": test.n, "difference": test.difference,
            "p_value": test.p_value, "ci95": None if test.ci95 is None else list(test.ci95)}


def _change(a: EpisodeRecord | None, b: EpisodeRecord | None) -> str:
    if a is None:
        return "only in B"
    if b is None:
        return "only in A"
    if a.status != "ok" or b.status != "ok":
        return "not scored"
    won_a, won_b = bool(a.metrics.get("success")), bool(b.metrics.get("success"))
    if won_a == won_b:
        return "both succeed" if won_a else "both fail"
    return "gained" if won_b else "lost"


# -- training curves --------------------------------------------------------------------------
#: The file Hugging Face's Trainer (and so every TRL trainer) writes with its ``log_history``:
#: in each ``checkpoint-N`` folder, and in the output folder when the state is saved there.
TRAINER_STATE_FILE = "trainer_state.json"
#: Online GRPO's per-step sample records (``OUT/rollouts/step-NNNNNN/samples*.jsonl``).
ROLLOUTS_FOLDER = "rollouts"
_CHECKPOINT = re.compile(r"checkpoint-(\d+)$")
_STEP_FOLDER = re.compile(r"step-(\d+)$")
#: log_history keys that are bookkeeping, not curves.
_NOT_CURVES = frozenset({"step", "epoch", "total_flos", "train_runtime",
                         "train_samples_per_second", "train_steps_per_second"})


def find_trainings(roots: Iterable[Path]) -> dict[Path, dict[str, list[tuple[float, float]]]]:
    """Training output folders at or under ``roots`` and their curves: every numeric
    ``log_history`` key of the newest ``trainer_state.json`` (the output folder's own, else
    its latest checkpoint's: each checkpoint holds the history up to it) against the step, and
    for online GRPO the mean reward of each step's samples."""
    states: dict[Path, tuple[int, Path]] = {}
    rollouts: dict[Path, list[tuple[int, Path]]] = defaultdict(list)
    for root in roots:
        for folder, files in walk_folders(root.resolve()):
            here = Path(folder)
            if TRAINER_STATE_FILE in files:
                match = _CHECKPOINT.search(here.name)
                owner, rank = (here.parent, int(match.group(1))) if match else (here, 1 << 62)
                if owner not in states or rank > states[owner][0]:
                    states[owner] = (rank, here / TRAINER_STATE_FILE)
            step = _STEP_FOLDER.search(here.name)
            if step and here.parent.name == ROLLOUTS_FOLDER:
                for name in files:
                    if name.startswith("samples") and name.endswith(".jsonl"):
                        rollouts[here.parent.parent].append((int(step.group(1)), here / name))
    trainings: dict[Path, dict[str, list[tuple[float, float]]]] = {}
    for owner, (_, path) in states.items():
        curves = _log_history_curves(path)
        if curves:
            trainings[owner] = curves
    for owner, files in rollouts.items():
        curve = _rollout_reward_curve(files)
        if curve:
            trainings.setdefault(owner, {})["rollout mean reward (samples)"] = curve
    return dict(sorted(trainings.items()))


def _log_history_curves(path: Path) -> dict[str, list[tuple[float, float]]]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    history = state.get("log_history") if isinstance(state, dict) else None
    curves: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for entry in history if isinstance(history, list) else []:
        if not isinstance(entry, dict) or not _is_number(entry.get("step")):
            continue
        for key, value in entry.items():
            if key not in _NOT_CURVES and _is_number(value):
                curves[key].append((float(entry["step"]), float(value)))
    return dict(curves)


def _rollout_reward_curve(files: Sequence[tuple[int, Path]]) -> list[tuple[float, float]]:
    rewards: dict[int, list[float]] = defaultdict(list)
    for step, path in files:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                sample = json.loads(line)
            except ValueError:  # a line being written
                continue
            if isinstance(sample, dict) and _is_number(sample.get("reward")):
                rewards[step].append(float(sample["reward"]))
    return [(float(step), statistics.fmean(values)) for step, values in sorted(rewards.items())
            if values]


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def training_plots(curves: dict[str, list[tuple[float, float]]]) -> list[dict[str, str]]:
    """One chart per curve, losses and rewards first: ``{"name", "svg"}`` each."""
    def rank(name: str) -> tuple[int, str]:
        lowered = name.lower()
        return (0 if "loss" in lowered else 1 if "reward" in lowered else 2, name)

    return [{"name": name, "svg": line_chart({name: curves[name]}, title=name)}
            for name in sorted(curves, key=rank) if curves[name]]

"""The suite's tasks: seeded codewords, and the task-set source ``colbench data`` uses."""

from __future__ import annotations

import json
import random
from pathlib import Path

from colbench.errors import ConfigError
from colbench.tasks import Task, TaskSet

#: Words a codeword is drawn from.
WORDS = ("amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
         "juniper", "kestrel", "lantern", "meadow", "nickel", "orchid", "pepper")
#: Tasks per split of the built-in task sets.
SPLIT_SIZES = {"test": 8, "train": 32}


def codeword_task(task_id: str, split: str, codeword: str) -> Task:
    """One task: the public request, and the codeword only the person (and a critic) sees.

    Parameters
    ----------
    task_id:
        The task's id.
    split:
        The split it belongs to.
    codeword:
        The word the agent must find out.
    """
    return Task(id=task_id, suite="codeword", split=split,
                prompt="I have a codeword in mind. Ask me for it, then reply "
                       "'ANSWER: <codeword>'.",
                privileged={"codeword": codeword})


def load_codeword_tasks(split: str = "test") -> TaskSet:
    """The built-in task set of ``split`` (``test`` or ``train``), the same on every call.

    Parameters
    ----------
    split:
        Which split.
    """
    if split not in SPLIT_SIZES:
        raise ConfigError(f"codeword: unknown split {split!r} (known: {', '.join(SPLIT_SIZES)})")
    rng = random.Random(f"codeword-{split}")
    tasks = [codeword_task(f"codeword-{split}-{i:03d}", split, rng.choice(WORDS))
             for i in range(SPLIT_SIZES[split])]
    return TaskSet(f"codeword-{split}", tasks)


class CodewordTaskSets:
    """What the suite contributes to ``colbench data`` (``colbench data build codeword``)."""

    env_id = "example/Codeword-v0"

    def build(self, split: str) -> TaskSet:
        """The built-in task set of ``split``.

        Parameters
        ----------
        split:
            ``test`` or ``train``.
        """
        return load_codeword_tasks(split)

    def import_file(self, source: Path, out: Path, *, split: str | None, name: str) -> TaskSet:
        """Convert a published file of ``{"codeword": ...}`` rows into a task file at ``out``.

        Parameters
        ----------
        source:
            The published JSONL file.
        out:
            Where the task file is written.
        split:
            The tasks' split (None: ``test``).
        name:
            The task set's name.
        """
        tasks = []
        for lineno, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            row = json.loads(line) if line.strip() else None
            if row is None:
                continue
            if not isinstance(row, dict) or not isinstance(row.get("codeword"), str):
                raise ConfigError(f"{source}:{lineno}: a row needs a 'codeword' string")
            tasks.append(codeword_task(f"{name}-{len(tasks):03d}", split or "test",
                                       row["codeword"]))
        task_set = TaskSet(name, tasks)
        task_set.save(out)
        return task_set


TASK_SETS = CodewordTaskSets()

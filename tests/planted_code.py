"""Code planted in a file that readers must never run (issue 21: data is never code).

:func:`plant_code` writes a Python file whose import writes a marker file, and returns the
specs a hostile run directory, data set or upload would name it by; :func:`backend_run`
writes a backend run directory by hand whose ``run.json`` names a simulator, with records
that carry no task metadata and no ``tasks.jsonl``, so that a reader that wants the tasks'
metadata or privileged data must make the env from ``run.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from colbench.records import EpisodeRecord, TurnRecord
from colbench.rundir import RunDir

BACKEND = "colbench/Backend-v0"


@dataclass(frozen=True)
class Planted:
    """A planted module: ``python_spec`` (a ``python:`` model naming the file), ``class_spec``
    (``module:Class``, importable once ``folder`` is on ``sys.path``), and ``marker``, the
    file its import writes."""

    folder: Path
    python_spec: str
    class_spec: str
    marker: Path

    def ran(self) -> bool:
        return self.marker.exists()


def plant_code(folder: Path, name: str = "planted_sim") -> Planted:
    """Write ``folder/<name>.py``, whose import writes ``folder/<name>.ran``."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f"{name}.ran"
    source = folder / f"{name}.py"
    source.write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('imported')\n\n"
        "def reply(messages):\n"
        "    return 'hello'\n\n"
        "class Simulator:\n"
        "    name = 'planted'\n\n"
        "    def reply(self, task, dialogue, message):\n"
        "        return 'hello'\n")
    return Planted(folder=folder, python_spec=f"python:{source}:reply",
                   class_spec=f"{name}:Simulator", marker=marker)


def backend_tasks(count: int = 2) -> list:
    """The first ``count`` tasks of the backend's test split."""
    from colbench.gyms.backend.tasks import load_backend_tasks

    return list(load_backend_tasks("test"))[:count]


def backend_run(folder: Path, env_kwargs: dict, *, env: str = BACKEND,
                tasks: int = 2) -> Path:
    """A backend run directory naming ``env_kwargs`` in ``run.json``: per task one episode
    that succeeded and one that failed, without task metadata, without ``tasks.jsonl``."""
    chosen = backend_tasks(tasks)
    run_dir = RunDir(folder)
    run_dir.prepare({"env": env, "model": "scripted:no-ask", "split": "test",
                     "task_set": {"name": "backend-test", "hash": "sha256:" + "0" * 64},
                     "trials": 2, "seed": 0, "env_kwargs": {"split": "test", **env_kwargs}})
    try:
        with run_dir.episode_writer() as writer:
            for task in chosen:
                for trial, success in ((0, True), (1, False)):
                    writer.write(EpisodeRecord(
                        task_id=task.id, trial=trial, env=env, model="scripted:no-ask",
                        status="ok", metrics={"success": success, "score": float(success)},
                        terminated=True, final_answer="def f(): pass",
                        turns=[TurnRecord(observation=task.prompt,
                                          action=f"I WANT TO ANSWER: def f(): return {trial}",
                                          reward=float(success))]))
    finally:
        run_dir.release_lock()
    return folder

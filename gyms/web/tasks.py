"""The web gym's task sets: shipped JSONL files, one per split, covering every site.

A web task's ``privileged`` data holds ``site`` (which site it runs on), ``start_url`` (the
path the episode opens), ``check`` (the checker's spec, see :mod:`.checkers`) and ``plan``
(the oracle's steps, see :mod:`.oracle`). Its ``metadata`` holds ``site``, ``kind``
(``info``, ``navigation``, ``state`` or ``infeasible``) and ``family`` (the template).
The files are written by :mod:`.taskgen` from the sites' seeded data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from colbench.errors import ConfigError
from colbench.gyms.web.sites import SITE_NAMES
from colbench.tasks import TaskSet

TASK_DIR = Path(__file__).resolve().parent / "taskdata"
SPLITS = ("train", "test")
KINDS = ("info", "navigation", "state", "infeasible")


def task_file(split: str) -> Path:
    if split not in SPLITS:
        raise ConfigError(f"the web gym has the splits {', '.join(SPLITS)}; got {split!r}")
    return TASK_DIR / f"web_{split}.jsonl"


def load_web_tasks(split: str = "test", source: str | Path | None = None,
                   sites: Sequence[str] | None = None) -> TaskSet:
    """The tasks of ``split`` (or of the JSONL file ``source``), only those of ``sites``."""
    task_set = TaskSet.load(source) if source is not None else TaskSet.load(task_file(split))
    if sites is None:
        return task_set
    unknown = [s for s in sites if s not in SITE_NAMES]
    if unknown:
        raise ConfigError(f"unknown web site(s) {unknown}; the sites are {list(SITE_NAMES)}")
    wanted = set(sites)
    picked = [t for t in task_set if t.privileged.get("site") in wanted]
    if not picked:
        raise ConfigError(f"{task_set.name} has no tasks for the site(s) {sorted(wanted)}")
    name = f"{task_set.name}:{'+'.join(sorted(wanted))}"
    return TaskSet(name, picked, version=task_set.version)

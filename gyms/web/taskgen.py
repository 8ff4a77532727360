"""Write (or verify) the web gym's task files from the sites' seeded data.

``python -m colbench.gyms.web.taskgen`` regenerates ``taskdata/web_{train,test}.jsonl`` and
their manifests; ``--check`` fails when the shipped files differ from what the generators
produce now (a test runs it, so a change to a site's seed cannot silently break its tasks).

Each site's ``tasks`` module has ``generate(conn) -> list[Draft]``: its table of task kinds
expanded over its seeded data (:func:`colbench.gyms.web.plans.generate_drafts`). Tasks get ids
``web.<site>.<family>.<nn>``; within each family every third task (the 2nd, 5th, ...) goes to
``test`` and the rest to ``train``, so both splits cover every family with 2+ tasks.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections import defaultdict

from colbench.gyms.web.checkers import validate_check
from colbench.gyms.web.plans import Draft
from colbench.gyms.web.site_process import pristine_db
from colbench.gyms.web.sites import SITE_NAMES, site_module
from colbench.gyms.web.tasks import KINDS, SPLITS, task_file
from colbench.tasks import Task, TaskSet

SUITE = "web"


def site_drafts(site: str) -> list[Draft]:
    conn = sqlite3.connect(f"file:{pristine_db(site)}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return site_module(site, "tasks").generate(conn)
    finally:
        conn.close()


def build_tasks() -> dict[str, list[Task]]:
    out: dict[str, list[Task]] = {split: [] for split in SPLITS}
    for site in SITE_NAMES:
        counters: dict[str, int] = defaultdict(int)
        for draft in site_drafts(site):
            if draft.kind not in KINDS:
                raise ValueError(f"{site}/{draft.family}: unknown kind {draft.kind!r}")
            validate_check(draft.check)
            index = counters[draft.family]
            counters[draft.family] += 1
            split = "test" if index % 3 == 1 else "train"
            task = Task(
                id=f"web.{site}.{draft.family}.{index:02d}", suite=SUITE, split=split,
                prompt=draft.prompt,
                privileged={"site": site, "start_url": draft.start_url, "check": draft.check,
                            "plan": draft.plan},
                metadata={"site": site, "kind": draft.kind, "family": draft.family,
                          **draft.extra})
            out[split].append(task)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only verify that the shipped files match the generators")
    args = parser.parse_args(argv)
    built = build_tasks()
    status = 0
    for split, tasks in built.items():
        fresh = TaskSet(f"web-{split}", tasks)
        path = task_file(split)
        if args.check:
            shipped = TaskSet.load(path)
            if shipped.hash != fresh.hash:
                print(f"{path} is stale: regenerate with python -m colbench.gyms.web.taskgen",
                      file=sys.stderr)
                status = 1
        else:
            fresh.save(path)
            kinds = defaultdict(int)
            for task in tasks:
                kinds[task.metadata["kind"]] += 1
            print(f"{path}: {len(tasks)} tasks {dict(kinds)}")
    return status


if __name__ == "__main__":
    sys.exit(main())

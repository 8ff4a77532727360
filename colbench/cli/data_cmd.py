"""``colbench data``: build, import and list task sets.

- ``colbench data import SUITE SOURCE [--name NAME] [--split SPLIT]``: convert a suite's
  published data into a colbench task set saved in the suite's private cache, loadable later
  with ``--tasks NAME``. SOURCE is a JSONL file, or ``hf:DATASET_ID`` (for the backend, the
  Hugging Face dataset ``facebook/collaborative_agent_bench``), read with the ``datasets``
  package, which needs network access to the hub or a local hub cache.
- ``colbench data build SUITE [--split test|train|all]``: generate the built-in sets now
  (otherwise they are generated on first use).
- ``colbench data list``: the task sets in each suite's cache, with counts and hashes.

The core knows no suite: each contributes a :class:`TaskSetSource` through the entry-point
group ``colbench.task_sets`` (``colbench.registry.task_sets``), named by the suite, whose
cache folder is ``colbench.taskcache.cache_dir(SUITE)``. The suite's module is imported only
when a command asks for that suite.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from colbench import registry, taskcache
from colbench.errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    from colbench.tasks import TaskSet


class TaskSetSource(Protocol):
    """What a suite contributes to ``colbench data`` (an entry point of ``colbench.task_sets``
    names an object with these members)."""

    #: The env the suite's task sets run on, for the hint printed after an import.
    env_id: str

    def import_file(self, source: Path, out: Path, *, split: str | None, name: str) -> TaskSet:
        """Convert the published JSONL file ``source`` into a task file at ``out`` (in the
        suite's cache), named ``name``; ``split=None`` lets the suite guess it."""
        ...

    def build(self, split: str) -> TaskSet:
        """Generate (or load from the cache) the built-in task set of ``split``."""
        ...


def _source(suite: str) -> TaskSetSource:
    source: TaskSetSource = registry.task_sets.get(suite)
    return source


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("data", help="build, import and list task sets")
    sub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="import published data as a named task set")
    suites = registry.task_sets.names()
    imp.add_argument("suite", choices=suites, help="the suite whose tasks these are")
    imp.add_argument("source", help="a published-format JSONL file, or hf:DATASET_ID")
    imp.add_argument("--name", help="task-set name (default: the file's stem)")
    imp.add_argument("--split", default=None,
                     help="split of the tasks (default: guessed from the name, else test)")
    imp.add_argument("--hf-split", default="test",
                     help="with hf:DATASET_ID, the dataset split to read (default: test)")
    imp.set_defaults(func=run_import)
    build = sub.add_parser("build", help="generate the built-in task sets now")
    build.add_argument("suite", choices=suites, help="the suite whose task sets to build")
    build.add_argument("--split", choices=("test", "train", "all"), default="all",
                       help="which split to build (default: all)")
    build.set_defaults(func=run_build)
    lst = sub.add_parser("list", help="list the task sets in the cache")
    lst.set_defaults(func=run_list)


def _hub_rows_to_file(dataset_id: str, split: str, path: Path) -> None:
    try:
        import datasets
    except ImportError as exc:
        raise MissingExtraError("importing data from the hub", "train", "datasets") from exc
    try:
        rows = datasets.load_dataset(dataset_id, split=split)
    except Exception as exc:  # no network, unknown id: say which
        raise ConfigError(f"could not load {dataset_id!r} split {split!r} from the Hugging "
                          f"Face hub: {exc}. Download the JSONL file elsewhere and import "
                          "the file instead.") from exc
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def run_import(args: argparse.Namespace) -> int:
    suite = _source(args.suite)
    cache = taskcache.cache_dir(args.suite)
    source = args.source
    if source.startswith("hf:"):
        dataset_id = source[3:]
        name = args.name or f"{dataset_id.split('/')[-1]}-{args.hf_split}"
        with tempfile.TemporaryDirectory() as tmp:
            rows_path = Path(tmp) / f"{name}.jsonl"
            _hub_rows_to_file(dataset_id, args.hf_split, rows_path)
            task_set = suite.import_file(rows_path, cache / f"{name}.jsonl",
                                         split=args.split or args.hf_split, name=name)
    else:
        path = Path(source)
        name = args.name or path.stem
        task_set = suite.import_file(path, cache / f"{name}.jsonl", split=args.split, name=name)
    print(f"imported {len(task_set)} tasks as {name!r} ({task_set.hash})")
    print(f"use it with: colbench evaluate {suite.env_id} --tasks {name} --model SPEC")
    return 0


def run_build(args: argparse.Namespace) -> int:
    suite = _source(args.suite)
    splits = ("test", "train") if args.split == "all" else (args.split,)
    for split in splits:
        task_set = suite.build(split)
        print(f"{task_set.name}: {len(task_set)} tasks ({task_set.hash})")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from colbench.tasks import TaskSetManifest

    for suite in registry.task_sets.names():
        cache = taskcache.cache_dir(suite)
        rows = []
        for manifest_path in sorted(cache.glob("*.manifest.json")):
            try:
                manifest = TaskSetManifest.model_validate_json(manifest_path.read_text())
            except ValueError:
                continue
            rows.append(f"  {manifest.name:<32} {manifest.count:>6} tasks  "
                        f"{manifest.split:<6} {manifest.hash}")
        print(f"{suite} task sets in", cache)
        print("\n".join(rows) if rows else "  (none yet: they are built on first use)")
    return 0

"""ScienceWorld task sets: (task, variation) pairs in train/dev/test splits that never overlap.

ScienceWorld divides the variations of each of its 30 tasks into train, dev and test. The table
of those lists ships with colbench (``sciworld_variations.json``, written by
:func:`write_variation_table` from the simulator itself), so building a task set needs no JVM.
Every (task, variation) pair belongs to exactly one split; :func:`load_sciworld_tasks` checks it,
since a published split that mixed them made test scores meaningless.

Task ids are ``sciworld/<task name>/<variation>``. A split's tasks are interleaved across task
names (one variation of each task, then a second of each, ...; variations in a seeded order),
so that its first N tasks (``--num-tasks N``) sample every task evenly.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.tasks import Task, TaskSet

SUITE = "sciworld"
SPLITS = ("train", "dev", "test")
TABLE_PATH = Path(__file__).with_name("sciworld_variations.json")
#: Gold action sequences of the first test tasks, generated once by :func:`write_gold_table`:
#: the simulator takes up to a minute to generate one, so the oracle's sample ships them.
GOLD_PATH = Path(__file__).with_name("sciworld_gold.json")
GOLD_SAMPLE = 40


#: Turn budget per ScienceWorld task type under colbench's default protocol. The oracle
#: replays the simulator's gold path, one action per turn, and the gold paths of a task type
#: differ in length between variations (melting gallium takes fewer waits than melting lead)
#: and from run to run (waiting loops), with a long tail: a larger sample keeps finding longer
#: ones (boil: 98 turns in the first 40 test tasks, 178 in a sample of every split). Each
#: budget is the longest oracle episode measured for the type (the shipped gold paths and
#: ``benchmarks/bench_oracles.py --envs sciworld --max-turns 1000`` with ``--per-group 3``
#: on every split and ``--per-group 8 --seed 1`` on train: 503 episodes) times 2, rounded up
#: to ten, and never below :data:`MIN_TURN_BUDGET`; ``bench_oracles.py --envs sciworld``
#: checks whole splits. Those episodes were measured in a JVM whose identity hashes varied,
#: which made pollination and heating vary from run to run, and 1 of the 503 failed
#: (mendelian-genetics-known-plant/1, solved in 144 turns when played again); the simulator
#: now plays the same actions the same way every time (``sciworld.start_simulator``). A task
#: type missing here gets :data:`DEFAULT_TURN_BUDGET`.
TURN_BUDGETS: dict[str, int] = {
    "boil": 360,
    "change-the-state-of-matter-of": 260,
    "chemistry-mix": 130,
    "chemistry-mix-paint-secondary-color": 70,
    "chemistry-mix-paint-tertiary-color": 90,
    "find-animal": 40,
    "find-living-thing": 40,
    "find-non-living-thing": 30,
    "find-plant": 30,
    "freeze": 280,
    "grow-fruit": 200,
    "grow-plant": 150,
    "identify-life-stages-1": 90,
    "identify-life-stages-2": 40,
    "inclined-plane-determine-angle": 380,
    "inclined-plane-friction-named-surfaces": 1480,
    "inclined-plane-friction-unnamed-surfaces": 410,
    "lifespan-longest-lived": 30,
    "lifespan-longest-lived-then-shortest-lived": 30,
    "lifespan-shortest-lived": 30,
    "measure-melting-point-known-substance": 150,
    "measure-melting-point-unknown-substance": 200,
    "melt": 280,
    "mendelian-genetics-known-plant": 330,
    "mendelian-genetics-unknown-plant": 330,
    "power-component": 30,
    "power-component-renewable-vs-nonrenewable-energy": 60,
    "test-conductivity": 90,
    "test-conductivity-of-unknown-substances": 70,
    "use-thermometer": 50,
}
#: The fewest turns any task type gets: room to explore beyond the gold path.
MIN_TURN_BUDGET = 30
DEFAULT_TURN_BUDGET = 30


def turn_budget(task_name: str) -> int:
    """The default turn budget of a ScienceWorld task type (see :data:`TURN_BUDGETS`)."""
    return TURN_BUDGETS.get(task_name, DEFAULT_TURN_BUDGET)


def read_variation_table(path: Path = TABLE_PATH) -> dict[str, Any]:
    """``{"tasks": {name: {"topic", "title", "train", "dev", "test"}}}``."""
    return json.loads(path.read_text(encoding="utf-8"))


def check_disjoint(table: dict[str, Any]) -> None:
    """Raise ConfigError when a variation sits in two splits or outside its task's range."""
    for name, entry in table["tasks"].items():
        seen: dict[int, str] = {}
        for split in SPLITS:
            for variation in entry[split]:
                if variation in seen:
                    raise ConfigError(f"ScienceWorld task {name!r}: variation {variation} is in "
                                      f"both {seen[variation]} and {split}")
                seen[variation] = split


def write_variation_table(path: Path = TABLE_PATH) -> dict[str, Any]:
    """Ask the simulator for every task's splits and write the table (needs Java)."""
    from colbench.gyms.embodied.sciworld import start_simulator, stop_simulator

    simulator = start_simulator()
    try:
        from scienceworld.constants import TASKS

        titles = {t["task_name"]: t for t in TASKS}
        tasks: dict[str, Any] = {}
        for name in simulator.get_task_names():
            simulator.load(name, 0, "")
            info = titles.get(name, {})
            tasks[name] = {"topic": info.get("topic", ""), "title": info.get("task", name),
                           "train": sorted(simulator.get_variations_train()),
                           "dev": sorted(simulator.get_variations_dev()),
                           "test": sorted(simulator.get_variations_test())}
    finally:
        stop_simulator(simulator)
    table = {"source": "scienceworld", "tasks": tasks}
    check_disjoint(table)
    # One line per task keeps the file small and its diffs readable.
    lines = [f" {json.dumps(name)}: {json.dumps(tasks[name], sort_keys=True)}"
             for name in sorted(tasks)]
    path.write_text('{"source": "scienceworld", "tasks": {\n' + ",\n".join(lines) + "\n}}\n",
                    encoding="utf-8")
    return table


def read_gold_table(path: Path = GOLD_PATH) -> dict[str, list[str]]:
    """``{task id: gold actions}`` for the shipped sample (empty when the file is absent)."""
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["gold"]


def write_gold_table(count: int = GOLD_SAMPLE, path: Path = GOLD_PATH) -> dict[str, list[str]]:
    """Generate the gold action sequences of the first ``count`` test tasks (needs Java) and
    check that each reaches a full score."""
    from colbench.gyms.embodied.sciworld import start_simulator, stop_simulator

    simulator = start_simulator()
    gold: dict[str, list[str]] = {}
    try:
        for task in load_sciworld_tasks("test")[:count]:
            name, variation = task.privileged["task_name"], task.privileged["variation"]
            simulator.load(name, variation, "", generateGoldPath=True)
            actions = list(simulator.get_gold_action_sequence())
            simulator.load(name, variation, "")
            simulator.server.step("look around")
            for action in actions:
                simulator.server.step(action)
            if simulator.server.getScore() < 1.0:
                raise ConfigError(f"the gold path of {task.id} does not reach a full score")
            gold[task.id] = actions
    finally:
        stop_simulator(simulator)
    lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in gold.items()]
    path.write_text('{"source": "scienceworld", "gold": {\n' + ",\n".join(lines) + "\n}}\n",
                    encoding="utf-8")
    return gold


@functools.lru_cache(maxsize=8)
def load_sciworld_tasks(split: str = "test", task_names: tuple[str, ...] | None = None) -> TaskSet:
    """The tasks of ``split`` (``train``, ``dev``, ``test``), optionally of some task names."""
    if split not in SPLITS:
        raise ConfigError(f"unknown ScienceWorld split {split!r}: use one of {', '.join(SPLITS)}")
    table = read_variation_table()
    check_disjoint(table)
    names = sorted(table["tasks"])
    if task_names:
        unknown = sorted(set(task_names) - set(names))
        if unknown:
            raise ConfigError(f"unknown ScienceWorld task(s) {unknown}; known: {names}")
        names = [n for n in names if n in set(task_names)]
    rng = random.Random(f"sciworld-{split}")
    order = rng.sample(names, len(names))
    queues = {n: rng.sample(table["tasks"][n][split], len(table["tasks"][n][split]))
              for n in order}
    gold = read_gold_table()
    tasks: list[Task] = []
    depth = 0
    while any(len(q) > depth for q in queues.values()):
        for name in order:
            if depth < len(queues[name]):
                variation = queues[name][depth]
                entry = table["tasks"][name]
                privileged: dict[str, Any] = {"task_name": name, "variation": variation}
                if f"{SUITE}/{name}/{variation}" in gold:
                    privileged["gold_actions"] = gold[f"{SUITE}/{name}/{variation}"]
                tasks.append(Task(
                    id=f"{SUITE}/{name}/{variation}", suite=SUITE, split=split,
                    prompt=(f"ScienceWorld task '{name}' ({entry['title']}), variation "
                            f"{variation}. The task description is the first observation."),
                    privileged=privileged,
                    metadata={"task_name": name, "variation": variation,
                              "topic": entry["topic"]}))
        depth += 1
    suffix = "" if not task_names else "-" + "+".join(names)
    return TaskSet(f"sciworld-{split}{suffix}", tasks)

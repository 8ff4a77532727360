"""SciWorld under ``--protocol agentgym``: AgentGym's released SciWorld server, reproduced.

* **Tasks.** AgentGym's ``data_idx`` ``i`` is the ``i``-th (task type, variation) pair when
  ScienceWorld's task types are taken in their id order (``1-1`` boil, ``1-2`` melt, ...),
  each with every one of its variations in index order, leaving out the task ids 5-1 and
  5-2 (grow-plant, grow-fruit), 9-1 to 9-3 (the inclined planes) and 10-1, 10-2 (mendelian
  genetics): 23 task types. ``test`` is indices 0-199 (AgentGym's evaluation set holds 200
  SciWorld items; its id list is not in the released repository, so the first 200 indices
  are the assumption made here), ``all`` every index, ``N-M`` any range.
* **Observation.** The first one is the task description, a newline, and the simulator's
  answer to ``look around``; then the simulator's text for each action.
* **Parser.** AgentGym's ReAct parser: the text after the last ``Action:``, stripped (every
  line of it); a message without the label sends the empty action.
* **Reward and budget.** The client's reward is ScienceWorld's running score (0-100, -100
  when the task failed), not its change; the episode ends when ScienceWorld reports it
  completed, or after its default step limit of 100 moves; no simplifications; 30 turns
  (``max_round`` in AgentGym's SciWorld scripts).
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from colbench.errors import ConfigError
from colbench.tasks import Task, TaskSet, index_split

PROTOCOL = "agentgym"
MAX_TURNS = 30
#: ScienceWorld's default step limit, which AgentGym's server keeps.
STEP_LIMIT = 100
TEST_SIZE = 200
#: The ScienceWorld task ids AgentGym's server leaves out.
EXCLUDED_TASK_IDS = frozenset({"5-1", "5-2", "9-1", "9-2", "9-3", "10-1", "10-2"})

SYSTEM_PROMPT = """You are an agent in ScienceWorld, a text simulation of a house, a \
greenhouse, a workshop and their surroundings, where you carry out science tasks. Each \
observation tells you what happened. Each turn, give one action such as "look around", \
"open door to kitchen", "go to kitchen", "pick up thermometer", "move OBJ to CONTAINER", \
"use OBJ on OBJ", "activate OBJ", "focus on OBJ", "connect OBJ to OBJ", "wait" or \
"inventory". Answer in this format:
Thought:
what you think

Action:
your one action"""


def task_types_in_id_order() -> list[tuple[str, str]]:
    """ScienceWorld's (task id, task name) pairs in id order, from the data file the
    ``scienceworld`` package ships (no JVM needed)."""
    text = resources.files("scienceworld").joinpath("tasks.json").read_text(encoding="utf-8")
    return [(t["task_id"], t["task_name"]) for t in json.loads(text)]


def agentgym_games(variation_counts: dict[str, int]) -> list[tuple[str, int]]:
    """AgentGym's list of (task name, variation): see the module docstring.
    ``variation_counts`` gives each task name's number of variations."""
    games = []
    for task_id, name in task_types_in_id_order():
        if task_id in EXCLUDED_TASK_IDS:
            continue
        if name not in variation_counts:
            raise ConfigError(f"ScienceWorld task {name!r} ({task_id}) has no variation count")
        games += [(name, variation) for variation in range(variation_counts[name])]
    return games


def task_id(index: int) -> str:
    return f"sciworld/agentgym-{index}"


@functools.lru_cache(maxsize=8)
def load_agentgym_tasks(split: str = "test") -> TaskSet:
    """Tasks of ``split``: ``test`` (indices 0-199), ``all`` or ``N-M``."""
    from colbench.gyms.embodied.sciworld_tasks import TABLE_PATH

    table = json.loads(TABLE_PATH.read_text(encoding="utf-8"))["tasks"]
    # The table lists each split's variation indices; together they are 0 to n-1.
    counts = {name: sum(len(entry[s]) for s in ("train", "dev", "test"))
              for name, entry in table.items()}
    games = agentgym_games(counts)
    indices = index_split(split, env="SciWorld", test_size=TEST_SIZE, count=len(games),
                          bounded=True)
    return TaskSet(f"sciworld-agentgym-{split}", [
        Task(id=task_id(i), suite="sciworld", split=split,
             prompt=f"ScienceWorld (AgentGym index {i}): {games[i][0]}, variation {games[i][1]}.",
             privileged={"task_name": games[i][0], "variation": games[i][1]},
             metadata={"task_name": games[i][0], "variation": games[i][1], "data_idx": i,
                       "protocol": PROTOCOL})
        for i in indices])


def react_action(message: str) -> str:
    """The action AgentGym's ReAct parser reads: after the last ``Action:``, stripped."""
    head, label, action = message.rpartition("Action:")
    return action.strip() if label else ""

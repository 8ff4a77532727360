"""What ``colbench data`` asks of DeepSearch (the ``colbench.task_sets`` entry ``search``).

- ``colbench data import search QA.jsonl [--name NAME]``: a published QA file (FlashRAG's
  rows: ``question``, ``golden_answers``) becomes a task set saved in the suite's private
  cache, which ``--tasks NAME`` then names, with ``--protocol agentgym`` and the corpus
  (``--env-arg corpus=...``) or retrieval server (``--env-arg retriever=...``) it is asked
  over.
- ``colbench data build search``: generates the built-in splits' questions now (they are
  generated on first use anyway, in about a second each).
- ``colbench leaderboard challenge mint NAME --env colbench/DeepSearch-v0``: the server's
  secret seed makes a challenge world of its own (:meth:`SearchTaskSets.mint`), which the
  server's ``POST .../env`` lets a run search (:meth:`SearchTaskSets.serve_challenge`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from colbench import taskcache
from colbench.gyms.search.agentgym import load_qa_file
from colbench.gyms.search.tasks import load_search_tasks, mint_search_tasks
from colbench.tasks import Task, TaskSet

#: The suite name of ``colbench data`` and of the private cache folder.
SUITE = "search"


def saved_task_file(name: str) -> Path | None:
    """The task file ``colbench data import search`` saved as ``name``, if there is one."""
    path = taskcache.cache_dir(SUITE) / f"{name}.jsonl"
    return path if path.is_file() else None


class SearchTaskSets:
    """DeepSearch's :class:`colbench.cli.data_cmd.TaskSetSource` (see the module docstring)."""

    env_id = "colbench/DeepSearch-v0"

    def import_file(self, source: Path, out: Path, *, split: str | None, name: str) -> TaskSet:
        rows = load_qa_file(str(source))
        tasks = [task.model_copy(update={"split": split or "test"}) for task in rows]
        task_set = TaskSet(name, tasks)
        taskcache.save_private(task_set, out)
        return task_set

    def build(self, split: str) -> TaskSet:
        return load_search_tasks(split)

    def mint(self, seed: int, count: int, *, split: str) -> TaskSet:
        """``count`` questions over the challenge world of ``seed``, for the challenge split
        ``split`` (see :func:`colbench.gyms.search.tasks.mint_search_tasks`).

        Parameters
        ----------
        seed:
            The leaderboard's secret seed for the challenge.
        count:
            How many questions.
        split:
            The challenge split's name.
        """
        return mint_search_tasks(seed, count, split)

    def serve_challenge(self, task: Task, request: dict[str, Any]) -> dict[str, Any]:
        """The leaderboard's answer to a challenge run's env request about the hidden
        ``task`` (a search or an article of its world; see
        :func:`colbench.gyms.search.challenge.serve_challenge`).

        Parameters
        ----------
        task:
            The hidden task.
        request:
            The env's request.
        """
        from colbench.gyms.search.challenge import serve_challenge

        return serve_challenge(task, request)


TASK_SETS = SearchTaskSets()

"""The DeepSearch suite's replay: how a server re-checks a recorded DeepSearch episode.

DeepSearch is deterministic given the task: the task names the seed of its world, from
which the server regenerates the same world, the same articles and the same BM25 index
(results are ordered by score, then document id, so ties cannot reorder them between
machines). A fresh :class:`~colbench.gyms.search.env.DeepSearchEnv` is stepped with the
recorded messages (see :class:`colbench.replay.EnvReplay`) and everything is compared: the
question, each search's results and each article, the reward, how and where the episode
ended, and the terminal metrics (the answer's exact match and F1, searches, articles
opened, evidence recall...). A record edited to success, one with an edited observation, or
one written without searching disagrees with the env somewhere.

A run made with another ``top_k`` than the default (5) is replayed with its own: every
step's ``info`` records it (records written before that replay with the default); the value
is only a claim, which the re-stepped result lists then confirm or refute. Such an episode
is still named a problem, as one over the turn budget is: a board (env, split, protocol)
compares runs at the default, and more results per search make every question easier, so
the run is listed with the server's figures but not verified.

An episode over a user's own corpus (``--protocol agentgym`` with ``corpus=`` or
``retriever=``) names no world seed: the server has no such corpus, so it says so and scores
the episode 0 rather than trusting the record.

Cost: the world and its index are made once per process (about a second each); a replay is
about a millisecond per search.
"""

from __future__ import annotations

from typing import ClassVar

from colbench.gyms.search.env import DEFAULT_TOP_K, DeepSearchEnv
from colbench.records import EpisodeRecord
from colbench.replay import EnvReplay, ReplayResult, RunFacts
from colbench.tasks import Task, TaskSet


def recorded_top_k(record: EpisodeRecord) -> int:
    """The results per search the episode was played with: what its steps' ``info`` say
    (the first that says one), else the default. A value the env would refuse reads as the
    default, so the replay's result lists disagree with the record's.

    Parameters
    ----------
    record:
        The recorded episode.
    """
    for turn in record.turns:
        top_k = turn.info.get("top_k")
        if top_k is not None:
            valid = isinstance(top_k, int) and not isinstance(top_k, bool) and 1 <= top_k <= 50
            return top_k if valid else DEFAULT_TOP_K
    return DEFAULT_TOP_K


class DeepSearchReplay(EnvReplay):
    """Replays ``colbench/DeepSearch-v0`` episodes; see the module docstring.

    Parameters
    ----------
    sandbox : object or None
        Handed to every replay by a server; ignored, since no code runs.
    """

    #: A DeepSearch env has no simulated human (a challenge run asks the server none).
    asks_simulator: ClassVar[bool] = False
    checked_metrics: ClassVar[tuple[str, ...]] = (
        "score", "success", "exact_match", "f1", "answered", "searches", "opened",
        "evidence_recall", "turns", "invalid_actions", "hops", "kind")

    FIRST_OBSERVATION = "{where}: the first observation is not the task's question"
    OBSERVATION = ("{where}: turn {turn}: the recorded result of the action is not what the "
                   "search engine or the corpus returns")
    LAST_OBSERVATION = ("{where}: turn {turn}: the recorded result of the last action is not "
                        "the env's")
    ENDED_EARLY = "{where}: the answer is given at turn {turn} but the transcript goes on"
    NOT_ENDED = ("{where}: the transcript stops after turn {turn} without an answer and "
                 "within the turn budget")

    def __init__(self, sandbox: object = None) -> None:
        del sandbox  # no untrusted code runs in a DeepSearch replay

    def check(self, task: Task, record: EpisodeRecord, run: RunFacts) -> ReplayResult:
        if not isinstance(task.privileged.get("world_seed"), int):
            return ReplayResult(self.failed_metrics(task, record), [
                f"task {task.id}: asked over a user's own corpus (no world seed), which the "
                "server cannot rebuild; not replayed"])
        result = super().check(task, record, run)
        top_k = recorded_top_k(record)
        if top_k != DEFAULT_TOP_K:
            result.problems.append(
                f"{record.task_id} trial {record.trial}: played with top_k={top_k} results "
                f"per search; runs are compared at the default {DEFAULT_TOP_K}")
        return result

    def make_env(self, task: Task, record: EpisodeRecord, run: RunFacts) -> DeepSearchEnv:
        return DeepSearchEnv(tasks=TaskSet(f"replay-{task.id}", [task]), protocol=run.protocol,
                             top_k=recorded_top_k(record))

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, object]:
        return {"score": 0.0, "success": False, "exact_match": 0.0, "f1": 0.0,
                "answered": False, "searches": 0, "opened": 0, "evidence_recall": 0.0,
                "turns": len(record.turns), "invalid_actions": 0,
                "hops": task.metadata.get("hops"), "kind": task.metadata.get("kind")}

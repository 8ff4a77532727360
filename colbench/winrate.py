"""Per-task win rate of one run against a reference run.

Each task both runs scored is one match: the run wins it when its task score is higher than
the reference's, loses it when lower, and a tie counts half. The win rate is the mean over
the shared tasks, with a 95% interval (Wilson's, from
:func:`colbench.stats.bounded_interval`). ``colbench compare`` prints it for two run
directories; the leaderboard shows it for each entry of a board against the reference entry
its operator names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from colbench.errors import ConfigError


@dataclass(frozen=True)
class WinRate:
    """One run's record against a reference on their shared tasks.

    Parameters
    ----------
    tasks:
        How many tasks both runs scored.
    wins, ties, losses:
        The run's matches won, tied and lost.
    rate:
        ``(wins + ties / 2) / tasks``.
    interval:
        The rate's 95% interval.
    """

    tasks: int
    wins: int
    ties: int
    losses: int
    rate: float
    interval: tuple[float, float]


def win_rate(scores: Mapping[str, float], reference: Mapping[str, float]) -> WinRate:
    """The win rate of ``scores`` against ``reference`` on the tasks both hold.

    Parameters
    ----------
    scores, reference:
        Task id -> task score, of the run and of the reference.
    """
    from colbench.stats import bounded_interval

    shared = sorted(set(scores) & set(reference))
    if not shared:
        raise ConfigError("the two runs share no scored task: a win rate compares runs on "
                          "the same tasks")
    outcomes = [1.0 if scores[t] > reference[t] else 0.0 if scores[t] < reference[t] else 0.5
                for t in shared]
    wins = sum(1 for o in outcomes if o == 1.0)
    ties = sum(1 for o in outcomes if o == 0.5)
    rate = sum(outcomes) / len(outcomes)
    return WinRate(tasks=len(shared), wins=wins, ties=ties, losses=len(shared) - wins - ties,
                   rate=rate, interval=bounded_interval(outcomes))

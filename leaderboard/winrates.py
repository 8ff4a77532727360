"""Win rates on a board: each entry's per-task win rate against the reference entry its
operator names (setting ``win_rate_references``).

A match is one task both entries scored; the figure compared is the server's own mean score
of the task (the verified breakdown's ``score``: for the frontend, the CLIP similarity the
server re-scored), a higher one wins and a tie counts half. The rate and its 95% interval are
:func:`colbench.winrate.win_rate`'s, the same as ``colbench compare`` prints for two run
directories. Breakdowns are read once per entry and verdict and kept in memory: a board page
reads only its own rows' and the reference's.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from colbench.errors import ConfigError
from colbench.leaderboard._db import LISTED, Database, Submission
from colbench.leaderboard._settings import LeaderboardSettings
from colbench.winrate import WinRate, win_rate

#: The per-task figure a win is decided on (the verified breakdown's per-task mean).
COMPARED = "score"


@dataclass
class BoardWinRates:
    """A board's reference and its entries' win rates against it.

    Parameters
    ----------
    reference:
        The reference entry's id, as the operator named it.
    model_name:
        The reference entry's model name (None when it is not on the board).
    problem:
        Why no win rate is shown (the reference is not a listed entry of this board), or
        None.
    rates:
        Entry id -> its win rate against the reference; None for an entry that shares no
        scored task with it.
    """

    reference: str
    model_name: str | None = None
    problem: str | None = None
    rates: dict[str, WinRate | None] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """The reference as the JSON API shows it."""
        return {"submission": self.reference, "model_name": self.model_name,
                "compared": COMPARED, "ties": "count half", "problem": self.problem}


def rate_json(rate: WinRate | None) -> dict[str, Any] | None:
    """One entry's win rate as the JSON API shows it (None: no shared task).

    Parameters
    ----------
    rate:
        The entry's win rate, or None.
    """
    if rate is None:
        return None
    return {"rate": rate.rate, "ci95": list(rate.interval), "tasks": rate.tasks,
            "wins": rate.wins, "ties": rate.ties, "losses": rate.losses}


def task_scores(breakdown: dict[str, Any]) -> dict[str, float]:
    """Task id -> the server's mean score of the task, over the tasks it scored.

    Parameters
    ----------
    breakdown:
        A verified submission's stored breakdown (its ``tasks`` rows).
    """
    return {row["task_id"]: float(row[COMPARED]) for row in breakdown.get("tasks") or []
            if isinstance(row.get(COMPARED), (int, float))
            and not isinstance(row.get(COMPARED), bool)}


class _ScoreCache:
    """Per-task scores by submission, each kept with the verdict time it was read at (a
    re-verified entry is read again)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._scores: OrderedDict[tuple[str, str], tuple[dt.datetime | None,
                                                         dict[str, float]]] = OrderedDict()
        self._lock = threading.Lock()

    def scores(self, db: Database, versions: dict[str, dt.datetime | None]
               ) -> dict[str, dict[str, float]]:
        """Submission id -> its per-task scores, for the ids of ``versions`` (id -> the
        verdict time the database holds now)."""
        found: dict[str, dict[str, float]] = {}
        with self._lock:
            for submission_id, verified_at in versions.items():
                cached = self._scores.get((db.url, submission_id))
                if cached is not None and cached[0] == verified_at:
                    found[submission_id] = cached[1]
        missing = [submission_id for submission_id in versions if submission_id not in found]
        if missing:
            with db.read() as session:
                rows = session.execute(select(Submission.id, Submission.verified_at,
                                              Submission.breakdown_json)
                                       .where(Submission.id.in_(missing))).all()
            with self._lock:
                for submission_id, verified_at, text in rows:
                    scores = task_scores(json.loads(text) if text else {})
                    found[submission_id] = scores
                    self._scores[(db.url, submission_id)] = (verified_at, scores)
                    self._scores.move_to_end((db.url, submission_id))
                while len(self._scores) > self.size:
                    self._scores.popitem(last=False)
        return found


_cache = _ScoreCache()


def board_win_rates(db: Database, reference: str, env: str, split: str, protocol: str,
                    entries: Sequence[str]) -> BoardWinRates:
    """The win rates of ``entries`` against ``reference`` on the board (env, split,
    protocol). A reference that is not a listed entry of that board gives none, saying why.

    Parameters
    ----------
    db:
        The leaderboard's database.
    reference:
        The reference entry's id (the operator's setting).
    env, split, protocol:
        The board.
    entries:
        The ids of the entries shown.
    """
    result = BoardWinRates(reference=reference)
    with db.read() as session:
        row = session.execute(select(Submission.env, Submission.split, Submission.protocol,
                                     Submission.status, Submission.model_name)
                              .where(Submission.id == reference)).first()
        if row is None or row.status not in LISTED:
            result.problem = (f"the reference entry {reference!r} is not on this server's "
                              "boards" + ("" if row is None else f" (it is {row.status})"))
            return result
        if (row.env, row.split, row.protocol) != (env, split, protocol):
            result.problem = (f"the reference entry {reference!r} is on the board {row.env} "
                              f"({row.split}, {row.protocol}), not on this one")
            return result
        result.model_name = row.model_name
        wanted = [reference, *entries]
        versions = dict(session.execute(select(Submission.id, Submission.verified_at)
                                        .where(Submission.id.in_(wanted))).all())
    scores = _cache.scores(db, versions)
    theirs = scores.get(reference, {})
    for entry in entries:
        try:
            result.rates[entry] = win_rate(scores.get(entry, {}), theirs)
        except ConfigError:  # no task both scored
            result.rates[entry] = None
    return result


def for_board(db: Database, settings: LeaderboardSettings, env: str, split: str,
              protocol: str, rows: Sequence[dict[str, Any]]) -> BoardWinRates | None:
    """The win rates of a board page's ``rows`` against the board's reference, or None when
    the operator names no reference for it.

    Parameters
    ----------
    db:
        The leaderboard's database.
    settings:
        The server's settings (``win_rate_references``).
    env, split, protocol:
        The board.
    rows:
        The page's rows (each with its ``id``).
    """
    reference = settings.win_rate_reference(env, split, protocol)
    if reference is None:
        return None
    return board_win_rates(db, reference, env, split, protocol, [row["id"] for row in rows])

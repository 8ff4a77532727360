"""A suite's replay declares, per protocol, the metrics its boards rank by
(:func:`colbench.replay.ranking_for`); the leaderboard reads it without importing the suite.
(The boards themselves are tested in tests/leaderboard/test_ranking.py.)"""

from __future__ import annotations

import pytest

from colbench.replay import DEFAULT_RANKING, find_replay, ranking_for, ranking_metrics


class Declares:
    ranking = {"paper": ["score", "pass@2"]}


def test_a_declared_protocol_ranks_by_its_metrics_and_the_others_by_default() -> None:
    assert ranking_for(Declares, "paper") == ("score", "pass@2")
    assert ranking_for(Declares, "colbench") == DEFAULT_RANKING == ("success_rate", "score")
    assert ranking_for(object, "paper") == DEFAULT_RANKING  # declares nothing
    assert ranking_for(None, "paper") == DEFAULT_RANKING  # no replay at all


def test_the_frontend_ranks_sweet_rl_boards_by_mean_similarity() -> None:
    frontend = find_replay("colbench/Frontend-v0")
    assert ranking_for(frontend, "sweet-rl") == ("score", "success_rate")
    assert ranking_for(frontend, "colbench") == DEFAULT_RANKING
    # The backend's sweet-rl figures are colbench's own (fraction of tests, all passed).
    assert ranking_for(find_replay("colbench/Backend-v0"), "sweet-rl") == DEFAULT_RANKING


@pytest.mark.parametrize(("declared", "error", "message"), [
    (["score"], TypeError, r"Bad.ranking must map protocol names to metric names, got list"),
    ({"paper": "score"}, TypeError, r"Bad.ranking\['paper'\] must be a non-empty list"),
    ({"paper": ()}, TypeError, r"Bad.ranking\['paper'\] must be a non-empty list"),
    ({"paper": ("score", 3)}, ValueError, r"names \[3\], which are not summary.json metric"),
    ({"paper": ("a b",)}, ValueError, r"names \['a b'\], which are not summary.json metric"),
    ({"paper": ("score", "score")}, ValueError, r"names a metric twice"),
])
def test_a_bad_declaration_is_refused_naming_the_replay(declared, error, message) -> None:
    Bad = type("Bad", (), {"ranking": declared})
    with pytest.raises(error, match=message):
        ranking_for(Bad, "paper")


def test_ranking_metrics_gives_a_tuple() -> None:
    assert ranking_metrics(["success_rate", "pass^3"]) == ("success_rate", "pass^3")

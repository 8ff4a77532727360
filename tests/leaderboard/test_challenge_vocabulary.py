"""An operator's private vocabulary (issue 20): a package registers extra Backend-v1 words
in ``colbench.backend_vocabularies``; a challenge minted with it by name draws names from
the package's words plus those, the oracle still solves its tasks, and a name nobody
registered, or an entry that is no vocabulary, is refused saying so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_registry import fake_distribution

import colbench
from colbench.errors import ConfigError
from colbench.leaderboard.challenge import hidden_tasks, mint_challenge
from colbench.tasks import TaskSet

from .conftest import make_board

SECRET = "a-server-secret-nobody-else-knows"
PRIVATE_WORDS = frozenset(
    "observatory telescope viewing_fee slot_cost aperture_mm exposure_seconds dome_height "
    "lenses nights_booked filters is_cloudy has_guide remote_dome mount site observer_note "
    "target_name seeing_scores frame_counts extras".split())
PRIVATE_VERBS = ("reckon", "appraise", "forecast", "audit", "gauge", "quote", "rate",
                 "cost_out", "triage", "weigh", "survey", "ballpark", "itemise", "review",
                 "settle", "reconcile", "bill", "meter", "project", "budget")


@pytest.fixture
def private_vocabulary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "opwords.py").write_text(
        "from colbench.gyms.backend.programs.vocabulary import Vocabulary, _domain\n"
        "OBSERVATORY = _domain('observatory', 'telescope', 'viewing_fee slot_cost',\n"
        "    'aperture_mm exposure_seconds dome_height', 'lenses nights_booked filters',\n"
        "    'is_cloudy has_guide remote_dome', 'mount=equatorial,altazimuth site=ridge,valley',\n"
        "    'observer_note target_name', 'seeing_scores frame_counts',\n"
        "    'extras=cooling,guiding,filters,archive')\n"
        f"WORDS = Vocabulary(domains=(OBSERVATORY,), verbs={PRIVATE_VERBS!r})\n"
        "NOT_WORDS = ['reckon']\n")
    fake_distribution(tmp_path, "opwords", """\
        [colbench.backend_vocabularies]
        observatory = opwords:WORDS
        broken = opwords:NOT_WORDS
        """)
    monkeypatch.syspath_prepend(str(tmp_path))


def _private_names(signature: str) -> set[str]:
    """The names in ``signature`` that only the private vocabulary has: argument names,
    and the function's verb, entity or result."""
    from colbench.gyms.backend.programs.vocabulary import DOMAINS, VERBS

    public = {w for d in DOMAINS for w in (d.entity, *d.results, *d.numbers, *d.counts,
                                            *d.flags, *d.labels, *d.texts, *d.lists,
                                            *d.mappings)} | set(VERBS)
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", signature))
    words = names | {v for v in PRIVATE_VERBS for n in names if n.startswith(v + "_")}
    words |= {w for n in names for w in ("telescope", "viewing_fee", "slot_cost") if w in n}
    return {w for w in words if w in PRIVATE_WORDS | set(PRIVATE_VERBS) and w not in public}


def test_a_challenge_minted_with_a_private_vocabulary_uses_its_words_and_stays_solvable(
        db_url: str, private_vocabulary: None) -> None:
    from baseline_checks import play, scripted

    board = make_board(db_url, challenge_secret=SECRET)
    try:
        info = mint_challenge(board.state.db, board.state.settings, "private", 6,
                              vocabulary="observatory")
        hidden = hidden_tasks(board.state.db, info.name)
        signatures = [t.metadata["signature"] for t in hidden]
        assert any(_private_names(s) for s in signatures), signatures
        # Without the vocabulary no private word appears.
        plain = mint_challenge(board.state.db, board.state.settings, "plain", 6)
        assert not any(_private_names(t.metadata["signature"])
                       for t in hidden_tasks(board.state.db, plain.name))
        tasks = TaskSet("private-sample", list(hidden))
        env = colbench.make("colbench/Backend-v1", tasks=tasks)
        try:
            for task in tasks:
                _, metrics = play(env, scripted(env, "oracle", task.id, 0), task.id, 0)
                assert metrics["success"], (task.id, metrics)
        finally:
            env.close()
    finally:
        board.state.worker.stop()
        board.state.db.dispose()


def test_the_same_secret_and_vocabulary_mint_the_same_tasks(private_vocabulary: None) -> None:
    from colbench.gyms.backend.programs.tasks import mint_tasks

    first = mint_tasks(7, 3, split="challenge-x", vocabulary="observatory")
    assert mint_tasks(7, 3, split="challenge-x", vocabulary="observatory").hash == first.hash
    assert mint_tasks(7, 3, split="challenge-x").hash != first.hash


def test_the_setting_names_the_vocabulary_and_bad_names_are_refused(
        db_url: str, private_vocabulary: None) -> None:
    board = make_board(db_url, challenge_secret=SECRET, challenge_vocabulary="observatory")
    try:
        with pytest.raises(ConfigError, match="no Backend-v1 vocabulary named 'nope'.*"
                                              "registered: .*observatory"):
            mint_challenge(board.state.db, board.state.settings, "unknown", 2,
                           vocabulary="nope")
        with pytest.raises(ConfigError, match="'broken'.*is a list, not a .*Vocabulary"):
            mint_challenge(board.state.db, board.state.settings, "broken", 2,
                           vocabulary="broken")
        with pytest.raises(ConfigError, match="mints no challenge with a private vocabulary"):
            mint_challenge(board.state.db, board.state.settings, "old", 2,
                           env="colbench/Backend-v0", vocabulary="observatory")
        from_setting = mint_challenge(board.state.db, board.state.settings, "set", 6)
        direct = hidden_tasks(board.state.db, from_setting.name)
        assert any(_private_names(t.metadata["signature"]) for t in direct)
    finally:
        board.state.worker.stop()
        board.state.db.dispose()

"""DeepSearch's blind baselines: they read only the chat and score between 0 and the
oracle; no-search guesses from the question, search-once answers from one snippet."""

from __future__ import annotations

import pytest

pytest.importorskip("bm25s", reason="DeepSearch needs the [search] extra")

from baseline_checks import check_blind_baseline  # noqa: E402

from colbench.gyms.search import DeepSearchEnv  # noqa: E402
from colbench.gyms.search.baselines import (  # noqa: E402
    SearchOnce,
    guess_from_question,
    names_in,
)


@pytest.mark.parametrize("name", ["no-search", "search-once"])
def test_baselines_are_blind_and_below_the_oracle(name: str) -> None:
    env = DeepSearchEnv(split="test")
    try:
        means = check_blind_baseline(env, name, env.tasks.ids()[:24])
    finally:
        env.close()
    assert means["oracle_success"] == pytest.approx(1.0) and means["baseline_success"] < 0.5


def test_no_search_guesses_from_the_question_alone() -> None:
    assert guess_from_question("Who was born earlier, Ada Korv or Liv Nimans?") == "Ada Korv"
    assert guess_from_question("In what year was the Selith Academy founded?") == "1900"
    assert guess_from_question("Who founded the Selith Academy?") == "Selith Academy"


def test_search_once_answers_the_top_snippets_most_frequent_new_name() -> None:
    messages = [
        {"role": "user", "content": "Question: Who founded the Selith Academy?"},
        {"role": "assistant", "content": "Action: search[Who founded the Selith Academy?]"},
        {"role": "user", "content": (
            'Results for "Who founded the Selith Academy?":\n'
            "[d0700] Selith Academy: Emil Nimoust founded the Selith Academy in 1883.\n"
            "[d0701] Selith Records: Dagny Falilnd founded the Selith Records in 1826.")}]
    assert SearchOnce(seed=0).act(messages[:1]) == (
        "Action: search[Who founded the Selith Academy?]")
    assert SearchOnce(seed=0).act(messages) == "Action: answer[Emil Nimoust]"
    assert names_in("Born in 1991, Jasper Fenenth is known.") == ["Jasper Fenenth"]

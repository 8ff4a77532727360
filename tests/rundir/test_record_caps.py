"""Every text of a record is capped when ``episodes.jsonl`` is written, with a marker that
says how much was cut; the record's identity never is."""

from __future__ import annotations

import pytest

from colbench.errors import ConfigError
from colbench.records import EpisodeRecord, TurnRecord
from colbench.rundir import (
    DEFAULT_MAX_FIELD_CHARS,
    RunDir,
    cap_record_text,
    cut_text,
    read_episodes,
)

BIG = "x" * 1_000


def test_cut_text_keeps_the_head_and_names_what_was_cut():
    assert cut_text("short", 5) == "short"
    assert cut_text("a" * 64_000_010, 10) == "a" * 10 + "…[cut 64,000,000 characters]"


def big_record() -> EpisodeRecord:
    return EpisodeRecord(
        task_id="t" * 300, trial=0, env="e", model="m" * 300, status="ok", failure="model",
        error=BIG, system_prompt=BIG, final_answer=BIG,
        metrics={"success": False, "score": 0.0, "reason": BIG, "nested": {"log": [BIG, 1]}},
        turns=[TurnRecord(observation=BIG, action=BIG, next_observation=BIG,
                          info={"stdout": BIG, "images": ["a.png"], "steps": 3})],
        notes=BIG)  # an extra field a hook added


def test_every_text_is_cut_and_the_identity_is_kept():
    capped = cap_record_text(big_record(), 100)
    marker = "x" * 100 + "…[cut 900 characters]"
    turn = capped.turns[0]
    assert [capped.error, capped.system_prompt, capped.final_answer, turn.observation,
            turn.action, turn.next_observation, turn.info["stdout"], capped.metrics["reason"],
            capped.metrics["nested"]["log"][0], capped.model_extra["notes"]] == [marker] * 10
    # What is not text, or not too long, is untouched.
    assert turn.info["images"] == ["a.png"] and turn.info["steps"] == 3
    assert capped.metrics["nested"]["log"][1] == 1 and capped.metrics["score"] == 0.0
    # Resume and the leaderboard find episodes by these: never cut.
    assert capped.task_id == "t" * 300 and capped.model == "m" * 300
    assert capped.key == big_record().key


def test_a_record_within_the_cap_is_not_copied():
    record = big_record()
    assert cap_record_text(record, 1_000) is record
    assert cap_record_text(record) is record  # the default cap is far above 1,000
    assert DEFAULT_MAX_FIELD_CHARS == 100_000
    # Cutting one turn leaves the caller's record as it was.
    capped = cap_record_text(record, 10)
    assert record.turns[0].action == BIG and capped.turns[0].action != BIG


def test_the_writer_caps_what_it_writes(tmp_path):
    run = RunDir(tmp_path)
    with run.episode_writer(max_field_chars=50) as writer:
        writer.write(big_record())
    size = run.episodes_path.stat().st_size
    assert size < 3_000  # ten 1,000-character texts would be over 10,000 bytes
    (read_back,) = read_episodes(run.episodes_path)
    assert read_back.turns[0].action == "x" * 50 + "…[cut 950 characters]"
    assert read_back.model_extra["notes"].endswith("…[cut 950 characters]")
    # By default a 100,000-character answer is stored whole.
    whole = big_record().model_copy(update={"final_answer": "y" * DEFAULT_MAX_FIELD_CHARS})
    with run.episode_writer() as writer:
        writer.write(whole)
    assert read_episodes(run.episodes_path)[1].final_answer == "y" * DEFAULT_MAX_FIELD_CHARS


@pytest.mark.parametrize("cap", [0, -5, 2.5, "100", True])
def test_a_cap_that_is_no_number_of_characters_is_refused(tmp_path, cap):
    with pytest.raises(ConfigError, match="must be a whole number of characters, at least 1"):
        RunDir(tmp_path).episode_writer(max_field_chars=cap)
    with pytest.raises(ConfigError, match=repr(cap).replace(".", r"\.")):
        cap_record_text(big_record(), cap)

"""The folded BabyAI row of ``colbench list envs``: the whole family's counts
(``colbench/BabyAI-v0``), not its first level's, and every split BabyAI has, ``dev`` too
(issue 26)."""

from __future__ import annotations

from colbench.cli.env_info import EnvInfo, env_info
from colbench.cli.env_listing import fold_families
from colbench.cli.list_cmd import format_family


def _info(env_id: str, test: int | None, train: int | None) -> EnvInfo:
    return EnvInfo(env_id=env_id, source="builtin", entry_point="m:C",
                   splits={"test": test, "train": train})


def test_a_folded_family_shows_the_member_with_the_most_tasks():
    infos = [_info("x/Lone-v0", 3, 4), _info("x/F-A-v0", 5, 250), _info("x/F-v0", 200, 9963),
             _info("x/F-B-v0", 5, 250)]
    family_of = {"x/Lone-v0": None, "x/F-A-v0": "f", "x/F-v0": "f", "x/F-B-v0": "f"}
    rows = fold_families(infos, family_of)
    assert [row.info.env_id for row in rows] == ["x/Lone-v0", "x/F-v0"]
    assert rows[1].members == ("x/F-A-v0", "x/F-v0", "x/F-B-v0")
    text = format_family(rows[1])
    assert "facts of x/F-v0" in text and "test (200 tasks), train (9963 tasks)" in text
    # Not counted (--no-counts): the first member stands for the family.
    uncounted = [_info(info.env_id, None, None) for info in infos]
    assert fold_families(uncounted, family_of)[1].info.env_id == "x/F-A-v0"


def test_babyai_lists_its_dev_split_and_the_whole_family_counts():
    whole = env_info("colbench/BabyAI-v0")
    assert whole.splits == {"train": 9963, "dev": 400, "test": 200}
    level = env_info("colbench/BabyAI-GoToObj-v0")
    assert list(level.splits) == ["train", "dev", "test"] and level.splits["dev"] == 10
    rows = fold_families([level, whole], {level.env_id: "babyai", whole.env_id: "babyai"})
    assert rows[0].info is whole

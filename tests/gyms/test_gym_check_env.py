"""The crafting, deep-search and embodied gyms register every id they promise
(tests/test_check_env.py runs Gymnasium's checker over all registered ids)."""

from __future__ import annotations

import colbench

GYM_IDS = sorted(i for i in colbench.env_ids()
                 if i.startswith(("colbench/TextCraft", "colbench/BabyAI", "colbench/SciWorld",
                                  "colbench/DeepSearch")))
NEEDS = {"colbench/TextCraft": ("textcraft",), "colbench/BabyAI": ("minigrid",),
         "colbench/SciWorld": ("scienceworld",), "colbench/DeepSearch": ("bm25s",)}
# One quick ScienceWorld task keeps the JVM part of the check short (still ~20 s: the JVM
# starts and loads the task several times).
KWARGS = {"colbench/SciWorld-v0": {"task_names": ["find-plant"]}}


def test_every_gym_id_is_registered():
    assert "colbench/TextCraft-v0" in GYM_IDS and "colbench/SciWorld-v0" in GYM_IDS
    assert "colbench/DeepSearch-v0" in GYM_IDS
    assert len([i for i in GYM_IDS if i.startswith("colbench/BabyAI")]) == 41

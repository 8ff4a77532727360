"""Every registered env passes Gymnasium's checker: one parametrised test over all ids."""

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import colbench

# Options that keep a check short without changing what is checked: one quick ScienceWorld
# task instead of loading several (each load costs seconds in the JVM).
FAST_OPTIONS = {"colbench/SciWorld-v0": {"task_names": ["find-plant"]}}
SLOW_PREFIXES = ("colbench/SciWorld", "colbench/Web")


@pytest.mark.parametrize("env_id", [
    pytest.param(i, marks=pytest.mark.slow) if i.startswith(SLOW_PREFIXES) else i
    for i in colbench.env_ids() if not i.startswith("colbench-test/")])
def test_check_env(env_id):
    env = gym.make(env_id, **FAST_OPTIONS.get(env_id, {}))
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()

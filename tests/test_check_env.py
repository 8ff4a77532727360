"""Every registered env passes Gymnasium's checker."""

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import colbench


@pytest.mark.parametrize("env_id", [i for i in colbench.env_ids() if not i.startswith("colbench-test/")])
def test_check_env(env_id):
    env = gym.make(env_id)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()

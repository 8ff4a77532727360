"""BabyAI's ids are one family (colbench/envs.py): registered when colbench is imported, with
kwargs per id, without importing minigrid or the env's own module (no [embodied] needed)."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym

import colbench
from colbench.gyms.embodied.babyai.levels import BABYAI_ENVS, LEVELS


def test_forty_one_ids_one_class_kwargs_per_level():
    ids = sorted(i for i in colbench.env_ids() if i.startswith("colbench/BabyAI"))
    assert ids == sorted(BABYAI_ENVS) and len(ids) == 41
    assert {entry for entry, _ in BABYAI_ENVS.values()} == {
        "colbench.gyms.embodied.babyai.env:BabyAIEnv"}
    assert gym.spec("colbench/BabyAI-v0").kwargs == {}  # all levels
    for family in LEVELS:
        spec = gym.spec(f"colbench/BabyAI-{family}-v0")
        assert spec.entry_point == "colbench.gyms.embodied.babyai.env:BabyAIEnv"
        assert spec.kwargs == {"levels": (family,)}


def test_importing_colbench_registers_them_without_minigrid():
    code = ("import sys, colbench, gymnasium as gym\n"
            "assert 'colbench/BabyAI-BossLevel-v0' in gym.registry\n"
            "assert 'colbench/BabyAI-BossLevel-v0' in colbench.env_ids()\n"
            "heavy = [m for m in ('minigrid', 'colbench.gyms.embodied.babyai.env') "
            "if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr

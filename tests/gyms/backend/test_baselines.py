"""The backend's blind baseline, on the real env and sandbox: no-ask reads only the chat and
scores between 0 and the oracle; generator-check is no baseline and says so."""

from __future__ import annotations

from baseline_checks import check_blind_baseline

from colbench.baselines import BlindAgent
from colbench.gyms.backend.env import BackendEnv
from colbench.gyms.backend.scripted import SCRIPTED_AGENTS


def test_no_ask_is_blind_and_below_the_oracle():
    env = BackendEnv(split="test")
    try:
        means = check_blind_baseline(env, "no-ask", env.tasks.ids()[:8])
    finally:
        env.close()
    assert means["oracle_success"] == 1.0 and means["baseline_success"] == 0.0


def test_only_no_ask_is_a_baseline():
    blind = {name for name, cls in SCRIPTED_AGENTS.items() if issubclass(cls, BlindAgent)}
    assert blind == {"no-ask"}
    doc = SCRIPTED_AGENTS["generator-check"].__doc__ or ""
    assert doc.startswith("Not a baseline")

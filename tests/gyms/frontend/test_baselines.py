"""The frontend's blind baseline, on the real renderer: no-ask reads only the chat and scores
between 0 and the oracle."""

from __future__ import annotations

from baseline_checks import check_blind_baseline

from colbench.gyms.frontend.env import FrontendEnv


def test_no_ask_is_blind_and_below_the_oracle(renderer, image_dir):
    env = FrontendEnv(split="test", scorer="perceptual", renderer=renderer, image_dir=image_dir)
    try:
        means = check_blind_baseline(env, "no-ask", env.tasks.ids()[:3])
    finally:
        env.close()
    assert means["oracle_score"] >= 0.99 and means["baseline_score"] < means["oracle_score"]

"""``online-grpo --preset agentgym-rl`` and ``--preset agentrl``: the papers' values, layered
under the user's own settings, through Python, YAML and the command line."""

from __future__ import annotations

import pytest

from colbench.trainers.config_io import build_config
from colbench.trainers.online_grpo_config import OnlineGRPOConfig

#: AgentGym-RL's released ScalingInter-RL scripts (examples/train/ScalingInter-RL/*_train.sh)
#: and its ppo_trainer.yaml, written out here independently of the preset table.
AGENTGYM_RL = {
    "beta": 0.001, "learning_rate": 1e-6, "lr_scheduler_type": "constant",
    "num_generations": 8, "horizon_stages": [10, 20, 30], "steps_per_stage": 100,
    "temperature": 1.0, "max_new_tokens": 512, "max_length": 10752, "entropy_coef": 0.001,
    "std_estimator": "unbiased", "task_normalisation": "off", "cross_policy_prob": 0.0,
    "overlap": False, "save_steps": 25,
}
#: AgentRL as issue 23 and this trainer's docs give it.
AGENTRL = {"cross_policy_prob": 0.25, "snapshot_every": 25, "off_policy_tokens": "train",
           "task_normalisation": "env", "overlap": True}


def _values(config, names):
    return {name: getattr(config, name) for name in names}


def test_agentgym_rl_preset_has_the_released_values():
    config = OnlineGRPOConfig(preset="agentgym-rl")
    assert _values(config, AGENTGYM_RL) == AGENTGYM_RL
    # 8 tasks x 8 episodes per optimiser step: the scripts' ppo_mini_batch_size of 8 prompts.
    episodes = config.per_device_train_batch_size * config.gradient_accumulation_steps
    assert episodes // config.num_generations == 8


def test_agentrl_preset_has_its_values():
    assert _values(OnlineGRPOConfig(preset="agentrl"), AGENTRL) == AGENTRL


def test_defaults_correct_other_policies_and_use_trls_std():
    config = OnlineGRPOConfig()
    assert (config.preset, config.off_policy_tokens, config.std_estimator, config.beta) == (
        None, "importance", "unbiased", 0.0)


def test_explicit_settings_override_the_preset():
    config = build_config(OnlineGRPOConfig, {"preset": "agentgym-rl", "beta": 0.01},
                          {"max_new_tokens": 64})
    assert (config.beta, config.max_new_tokens, config.learning_rate) == (0.01, 64, 1e-6)
    assert config.preset_overrides() == {"beta": 0.01, "max_new_tokens": 64}
    assert "preset `agentgym-rl`, with beta=0.01, max_new_tokens=64" in config.preset_note()


def test_preset_flag_on_the_command_line():
    pytest.importorskip("yaml")
    from colbench.trainers.commands.train import trainer_parser
    from colbench.trainers.config_io import flag_values

    parser = trainer_parser("online-grpo", OnlineGRPOConfig)
    options = parser.parse_args(["--model", "hf:x", "--out", "o", "--preset", "agentrl",
                                 "--cross-policy-prob", "0.5"])
    config = build_config(OnlineGRPOConfig, {}, flag_values(options))
    assert (config.cross_policy_prob, config.snapshot_every) == (0.5, 25)

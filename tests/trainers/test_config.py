"""A trainer's config dataclass fills from its defaults, a YAML file and flags, in that order.
(The flags and help that ``colbench train`` makes of it: tests/trainers/commands/test_train.py.)"""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

from colbench.errors import ConfigError  # noqa: E402
from colbench.trainers.config_io import build_config, config_fields, config_to_yaml  # noqa: E402
from colbench.trainers.mt_dpo_config import MTDPOConfig  # noqa: E402
from colbench.trainers.rft_config import RFTConfig  # noqa: E402
from colbench.trainers.sweet_rl_config import SweetRLConfig  # noqa: E402


def test_sweet_rl_defaults_are_the_papers():
    config = SweetRLConfig()
    assert (config.beta, config.nll_coef, config.critic_epochs, config.num_train_epochs,
            config.turn_fraction, config.num_candidates, config.pairs_per_turn) == (
        0.1, 0.01, 4.0, 1.0, 0.1, 16, 4)


def test_every_field_has_help():
    for config_class in (RFTConfig, MTDPOConfig, SweetRLConfig):
        for spec in config_fields(config_class):
            assert spec.help, f"{config_class.__name__}.{spec.name} has no help"


def test_flags_override_the_file_which_overrides_defaults():
    config = build_config(
        MTDPOConfig,
        {"beta": 0.3, "learning_rate": 5e-6, "lora": True, "lora_target_modules": ["q_proj"],
         "trl_args": {"warmup_steps": 3}, "max_pairs_per_task": None},
        {"beta": "0.5", "lora_target_modules": "q_proj,v_proj", "max_length": "null"})
    assert config.beta == 0.5  # flag
    assert config.learning_rate == 5e-6 and config.lora is True  # file
    assert config.lora_target_modules == ["q_proj", "v_proj"]
    assert config.trl_args == {"warmup_steps": 3}
    assert config.max_length is None and config.max_pairs_per_task is None
    assert config.nll_coef == 0.0  # default


def test_unknown_keys_and_wrong_types_are_named():
    with pytest.raises(ConfigError, match="no setting 'betta'.*did you mean beta"):
        build_config(MTDPOConfig, {"betta": 0.2})
    with pytest.raises(ConfigError, match="--num-candidates.*an integer"):
        build_config(SweetRLConfig, {}, {"num_candidates": "many"})
    with pytest.raises(ConfigError, match="key 'lora'.*true or false"):
        build_config(RFTConfig, {"lora": "perhaps"})
    with pytest.raises(ConfigError, match="beta must be positive"):
        build_config(MTDPOConfig, {"beta": -1})
    with pytest.raises(ConfigError, match="beta cannot be null"):
        build_config(MTDPOConfig, {"beta": None})


def test_yaml_round_trip(tmp_path):
    from colbench.trainers.config_io import load_yaml

    config = SweetRLConfig(num_candidates=8, lora=True, trl_args={"fsdp": "full_shard"})
    path = tmp_path / "sweet.yaml"
    path.write_text(config_to_yaml(config))
    assert "# candidate actions sampled per chosen turn" in path.read_text()
    assert build_config(SweetRLConfig, load_yaml(path)) == config

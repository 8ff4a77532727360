"""``--preset paper``: the released SWEET-RL training values, layered under the user's own
settings (defaults < preset < YAML < flags), for ``sweet-rl`` and ``mt-dpo``; and the settings
where the paper and the released code differ."""

from __future__ import annotations

import dataclasses
import json

import pytest

from colbench.errors import ConfigError
from colbench.trainers.config_io import build_config
from colbench.trainers.mt_dpo_config import MTDPOConfig
from colbench.trainers.sweet_rl_config import SweetRLConfig, critic_privileged

#: The released code's values (facebookresearch/sweet_rl README commands and the defaults of
#: its OpenRLHF fork's train_dpo), written out here independently of the preset table.
RELEASED_OPTIMISER = {
    "per_device_train_batch_size": 1, "gradient_accumulation_steps": 8,
    "lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.1},
    "warmup_steps": 0.03, "adam_beta1": 0.9, "adam_beta2": 0.95,
}


def _values(config, names):
    return {name: getattr(config, name) for name in names}


def test_sweet_rl_paper_preset_has_the_released_values():
    config = SweetRLConfig(preset="paper")
    assert _values(config, RELEASED_OPTIMISER) == RELEASED_OPTIMISER
    assert (config.learning_rate, config.critic_learning_rate) == (2e-7, 2e-7)
    assert (config.max_length, config.critic_max_length) == (16384, 8192)
    assert config.candidate_max_tokens == 1024
    assert (config.critic_epochs, config.num_train_epochs) == (4.0, 1.0)
    assert (config.beta, config.nll_coef, config.turn_fraction) == (0.1, 0.01, 0.1)
    assert (config.num_candidates, config.pairs_per_turn, config.candidate_temperature) == (
        16, 4, 1.0)
    # The critic reads the reference only; the paper's side of each difference.
    assert config.critic_privileged_keys == ["ground_truth"]
    assert (config.critic_aggregation, config.ranking_reference_privileged,
            config.nll_scope) == ("turn_sum", True, "action")
    assert config.critic_batch_size is None  # the critic's batch is the policy's: 1 x 8


def test_released_preset_takes_the_released_codes_side_of_each_difference():
    paper, released = SweetRLConfig(preset="paper"), SweetRLConfig(preset="released")
    differing = {f.name for f in dataclasses.fields(SweetRLConfig)
                 if getattr(paper, f.name) != getattr(released, f.name)}
    assert differing == {"preset", "critic_aggregation", "ranking_reference_privileged",
                         "nll_scope"}
    assert (released.critic_aggregation, released.ranking_reference_privileged,
            released.nll_scope) == ("trajectory_mean", False, "sequence")


def test_defaults_without_a_preset_are_unchanged():
    config = SweetRLConfig()
    assert config.preset is None
    assert (config.learning_rate, config.critic_learning_rate, config.candidate_max_tokens,
            config.lr_scheduler_type, config.adam_beta2) == (1e-6, 2e-6, 512, "linear", 0.999)
    assert config.critic_privileged_keys is None and config.critic_max_length is None
    assert config.truncated_candidates == "unfinished"


def test_mt_dpo_paper_preset_and_require_success_by_default():
    assert MTDPOConfig().require_success is True
    config = MTDPOConfig(preset="paper")
    assert _values(config, RELEASED_OPTIMISER) == RELEASED_OPTIMISER
    assert (config.learning_rate, config.max_length, config.beta, config.num_train_epochs,
            config.require_success) == (2e-7, 16384, 0.1, 1.0, True)


def test_explicit_settings_override_the_preset_in_every_source():
    # keyword arguments
    config = SweetRLConfig(preset="paper", learning_rate=1e-6, critic_privileged_keys=None)
    assert config.learning_rate == 1e-6 and config.critic_privileged_keys is None
    assert config.critic_learning_rate == 2e-7  # still the preset's
    assert config.preset_overrides() == {"learning_rate": 1e-6, "critic_privileged_keys": None}
    assert "preset `paper`, with" in config.preset_note() and "learning_rate" in config.preset_note()
    # a YAML file names the preset, a flag overrides one of its values; a flag may also set
    # back the class default (linear), which a preset applied after construction could not
    # tell from an unset value
    config = build_config(SweetRLConfig, {"preset": "paper", "max_length": 4096},
                          {"lr_scheduler_type": "linear", "candidate_max_tokens": "2048"})
    assert config.max_length == 4096 and config.lr_scheduler_type == "linear"
    assert config.candidate_max_tokens == 2048 and config.critic_max_length == 8192
    # the preset as a flag
    config = build_config(MTDPOConfig, {"learning_rate": 3e-7}, {"preset": "paper"})
    assert config.learning_rate == 3e-7 and config.adam_beta2 == 0.95


def test_presets_survive_copies_and_never_share_mutable_values():
    first = SweetRLConfig(preset="paper")
    first.critic_privileged_keys.append("test_cases")
    first.lr_scheduler_kwargs["min_lr_rate"] = 0.5
    second = SweetRLConfig(preset="paper")
    assert second.critic_privileged_keys == ["ground_truth"]
    assert second.lr_scheduler_kwargs == {"min_lr_rate": 0.1}
    copy = dataclasses.replace(second, lora=True)  # as the trainer does for the critic
    assert copy.learning_rate == 2e-7 and copy.lora is True
    assert json.loads(json.dumps(dataclasses.asdict(second)))["preset"] == "paper"


def test_bad_presets_and_settings_are_named():
    with pytest.raises(ConfigError, match="no preset 'papr'.*paper, released"):
        SweetRLConfig(preset="papr")
    with pytest.raises(ConfigError, match="no preset 'released'.*presets: paper"):
        build_config(MTDPOConfig, {}, {"preset": "released"})
    with pytest.raises(ConfigError, match="critic_aggregation must be one of turn_sum, "
                                          "trajectory_mean"):
        SweetRLConfig(critic_aggregation="mean")
    with pytest.raises(ConfigError, match="nll_scope must be one of action, sequence"):
        SweetRLConfig(nll_scope="all")
    with pytest.raises(ConfigError, match="truncated_candidates must be one of"):
        SweetRLConfig(truncated_candidates="finished")
    with pytest.raises(ConfigError, match="adam_beta2 must be in"):
        MTDPOConfig(adam_beta2=1.0)
    with pytest.raises(ConfigError, match="critic_privileged_keys is empty"):
        SweetRLConfig(critic_privileged_keys=[])


def test_the_optimiser_settings_reach_trls_config(tmp_path):
    pytest.importorskip("trl", reason="the trainers need colbench[train]")
    from trl import DPOConfig

    from colbench.trainers.trl_ext import make_config, training_arguments

    config = SweetRLConfig(preset="paper", gradient_checkpointing=False, bf16=False)
    args = make_config(DPOConfig, training_arguments(config, tmp_path,
                                                     **config.optimiser_arguments()))
    assert (args.adam_beta1, args.adam_beta2) == (0.9, 0.95)
    assert getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type) == "cosine_with_min_lr"
    assert args.lr_scheduler_kwargs == {"min_lr_rate": 0.1}
    assert (args.warmup_steps, args.learning_rate, args.max_length) == (0.03, 2e-7, 16384)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (1, 8)


def test_the_critic_reads_only_the_named_privileged_fields():
    privileged = {"ground_truth": "def f(): return 1", "test_cases": ["f()"], "facts": []}
    assert critic_privileged(privileged, ["ground_truth"], "t") == {
        "ground_truth": "def f(): return 1"}
    assert critic_privileged(json.dumps(privileged), None, "t") == privileged  # dataset text
    with pytest.raises(ConfigError, match="'ground_truth', which task 'c1' does not have "
                                          r"\(its privileged fields: goal, gold_actions\)"):
        critic_privileged({"goal": "x", "gold_actions": []}, ["ground_truth"], "c1")
    config = SweetRLConfig(preset="paper", use_privileged=False)
    assert config.critic_input(privileged, "t") is None


def _record(task_id: str, trial: int, score: float):
    from colbench.records import EpisodeRecord, TurnRecord

    return EpisodeRecord(task_id=task_id, trial=trial, env="syn/Secret-v0", model="m",
                         status="ok", system_prompt="s",
                         turns=[TurnRecord(observation="o", action=f"a{trial}")],
                         metrics={"success": score == 1.0, "score": score})


def test_mt_dpo_pairs_only_tasks_with_a_success_by_default():
    from colbench.trainers import TrajectoryData
    from colbench.trainers.mt_dpo_trainer import MTDPOTrainer

    # task "won": a success and a failure; task "lost": two failures of different scores
    data = TrajectoryData.from_records([_record("won", 0, 1.0), _record("won", 1, 0.2),
                                        _record("lost", 0, 0.5), _record("lost", 1, 0.1)])
    assert [p.task_id for p in MTDPOTrainer(MTDPOConfig()).pairs(data)] == ["won"]
    assert [p.task_id for p in MTDPOTrainer(MTDPOConfig(preset="paper")).pairs(data)] == ["won"]
    everything = MTDPOTrainer(MTDPOConfig(require_success=False)).pairs(data)
    assert sorted(p.task_id for p in everything) == ["lost", "won"]
    only_failures = TrajectoryData.from_records([_record("lost", 0, 0.5),
                                                 _record("lost", 1, 0.1)])
    with pytest.raises(ConfigError, match="no preference pairs.*require_success"):
        MTDPOTrainer(MTDPOConfig()).validate(only_failures)


@pytest.mark.slow
def test_train_sweet_rl_with_the_paper_preset_from_the_command_line(guess_data, tiny_llama,
                                                                     tmp_path, fast_flags,
                                                                     sweet_fast_flags):
    """``--preset paper`` with the tests' fast flags over it: the run trains, and its record
    keeps the preset, its values where no flag overrode them, and the overrides."""
    for module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
        pytest.importorskip(module, reason="the trainers need colbench[train]")
    from colbench.cli.main import main

    out = tmp_path / "ckpt"
    assert main(["train", "sweet-rl", "--model", f"hf:{tiny_llama}", "--data", str(guess_data),
                 "--out", str(out), "--preset", "paper", *fast_flags, *sweet_fast_flags,
                 "--critic-privileged-keys", "secret", "--critic-max-length", "512"]) == 0
    record = json.loads((out / "colbench_train.json").read_text())
    config = record["config"]
    assert config["preset"] == "paper"
    assert (config["adam_beta2"], config["lr_scheduler_type"], config["warmup_steps"]) == (
        0.95, "cosine_with_min_lr", 0.03)
    assert config["learning_rate"] == 1e-3 and config["critic_privileged_keys"] == ["secret"]
    card = (out / "README.md").read_text()
    assert "preset `paper`, with" in card and "critic_privileged_keys=['secret']" in card
    assert "candidates_truncated" in record["metrics"]

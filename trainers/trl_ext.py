"""What the built-in trainers add to TRL: per-turn loss masks in ``DPOTrainer``, shared
``TrainingArguments``, and saving.

:class:`TurnMaskedDPOTrainer` is TRL's ``DPOTrainer`` with one more dataset format: rows that
are already tokenized (``prompt_ids``, ``chosen_ids``, ``rejected_ids``) and say, per completion
token, which agent turn it belongs to (``chosen_turns``, ``rejected_turns``: the turn number,
or -1 for observations and template text). The DPO loss then sums log-probabilities over the
agent's tokens of every turn and nothing else; everything else (reference model or disabled
adapter, PEFT, accelerate and its FSDP/DeepSpeed plugins, logging, checkpoints, every
``loss_type`` of ``DPOConfig``) is TRL's own. Rows in TRL's own formats pass through unchanged.

This module imports TRL; it is imported only when a trainer runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from trl import DPOTrainer
from trl.trainer.dpo_trainer import DataCollatorForPreference

from colbench.errors import ConfigError

logger = logging.getLogger(__name__)

TURN_COLUMNS = ("chosen_turns", "rejected_turns")


def training_arguments(config: Any, out: Path, *, learning_rate: float | None = None,
                       epochs: float | None = None, **extra: Any) -> dict[str, Any]:
    """Keyword arguments for TRL's ``SFTConfig``/``DPOConfig`` from a :class:`TrainerConfig`.

    ``config.trl_args`` goes last, so a YAML file can set any TRL option, FSDP and DeepSpeed
    included (``accelerate launch`` then runs one process per GPU, as with TRL's scripts).
    """
    bf16 = config.bf16
    if bf16 is None:
        bf16 = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    args: dict[str, Any] = {
        "output_dir": str(out),
        "learning_rate": config.learning_rate if learning_rate is None else learning_rate,
        "num_train_epochs": config.num_train_epochs if epochs is None else epochs,
        "max_steps": config.max_steps,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "max_length": config.max_length,
        "warmup_steps": config.warmup_steps,
        "lr_scheduler_type": config.lr_scheduler_type,
        "seed": config.seed,
        "bf16": bf16,
        "gradient_checkpointing": config.gradient_checkpointing,
        "logging_steps": config.logging_steps,
        "save_strategy": "steps" if config.save_steps else "no",
        "report_to": "none",
    }
    if config.save_steps:
        args["save_steps"] = config.save_steps
    args.update(extra)
    args.update(config.trl_args)
    return args


def make_config(config_class: type, kwargs: dict[str, Any]) -> Any:
    """``config_class(**kwargs)``, with TRL's complaints about bad options as ConfigError."""
    try:
        return config_class(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{config_class.__name__}: {exc} (check trl_args)") from exc
    except ValueError as exc:
        raise ConfigError(f"{config_class.__name__}: {exc}") from exc


@dataclass
class TurnMaskedPreferenceCollator(DataCollatorForPreference):
    """TRL's preference collator; for rows with ``chosen_turns``/``rejected_turns`` the
    ``completion_mask`` covers the agent's tokens only. With ``with_turns`` the batch also
    carries ``turn_index`` (per token: agent turn number, -1 elsewhere, padding included)."""

    with_turns: bool = False

    def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        output = super().torch_call(examples)
        if "chosen_turns" not in examples[0]:
            if self.with_turns:
                raise ConfigError("rows without chosen_turns/rejected_turns cannot be scored "
                                  "per turn")
            return output
        rows = ([[-1] * len(e["prompt_ids"]) + list(e["chosen_turns"]) for e in examples]
                + [[-1] * len(e["prompt_ids"]) + list(e["rejected_turns"]) for e in examples])
        if self.max_length is not None:
            cut = (slice(None, self.max_length) if self.truncation_mode == "keep_start"
                   else slice(-self.max_length, None))
            rows = [row[cut] for row in rows]
        width = output["input_ids"].shape[1]
        turn_index = torch.full((len(rows), width), -1, dtype=torch.long)
        for r, row in enumerate(rows):
            turn_index[r, :len(row)] = torch.tensor(row, dtype=torch.long)
        output["completion_mask"] = (turn_index >= 0).long()
        if self.with_turns:
            output["turn_index"] = turn_index
        return output


class TurnMaskedDPOTrainer(DPOTrainer):
    """TRL's ``DPOTrainer`` that also takes tokenized rows with per-turn masks (module docs)."""

    _tag_names = ["trl", "dpo", "colbench", "multi-turn"]

    def __init__(self, *args: Any, data_collator: Any = None, **kwargs: Any) -> None:
        train_dataset = kwargs.get("train_dataset")
        if data_collator is None and train_dataset is not None:
            tokenizer = kwargs.get("processing_class")
            dpo_args = kwargs.get("args")
            pad_id = getattr(tokenizer, "pad_token_id", None)
            if pad_id is None:
                pad_id = getattr(tokenizer, "eos_token_id", None)
            if pad_id is None:
                raise ConfigError("the tokenizer has neither a pad nor an eos token")
            data_collator = TurnMaskedPreferenceCollator(
                pad_token_id=pad_id,
                max_length=getattr(dpo_args, "max_length", None),
                truncation_mode=getattr(dpo_args, "truncation_mode", "keep_start"),
                pad_to_multiple_of=getattr(dpo_args, "pad_to_multiple_of", None),
                with_turns=self._collate_turns)
        super().__init__(*args, data_collator=data_collator, **kwargs)

    #: Whether batches carry ``turn_index`` (the SWEET-RL critic's per-turn averages need it).
    _collate_turns = False

    def _prepare_dataset(self, dataset: Any, processing_class: Any, args: Any,
                         dataset_name: str) -> Any:
        columns = set(dataset.column_names or [])
        if not {"prompt_ids", "chosen_ids", "rejected_ids"} <= columns:
            return super()._prepare_dataset(dataset, processing_class, args, dataset_name)
        if args.max_length is not None and args.truncation_mode == "keep_start":
            # As TRL does: a prompt that fills max_length leaves no completion to learn from.
            before = len(dataset)
            dataset = dataset.filter(lambda row: len(row["prompt_ids"]) < args.max_length)
            if len(dataset) < before:
                logger.warning("%d of %d %s rows dropped: their prompt alone fills max_length "
                               "(%d tokens)", before - len(dataset), before, dataset_name,
                               args.max_length)
            if len(dataset) == 0:
                raise ConfigError(f"every {dataset_name} row's prompt fills max_length "
                                  f"({args.max_length} tokens); raise max_length")
        return dataset

    def _set_signature_columns_if_needed(self) -> None:
        super()._set_signature_columns_if_needed()
        if self._signature_columns is not None:
            for column in TURN_COLUMNS:
                if column not in self._signature_columns:
                    self._signature_columns.append(column)


def save_trained(trainer: Any, tokenizer: Any, out: Path) -> None:
    """Save the trained model (or adapter) and the tokenizer it was trained with into ``out``.

    Under ``accelerate launch`` every process calls this; TRL's ``save_model`` gathers sharded
    weights, and only the main process writes. The trainer's state (``trainer_state.json``,
    with its ``log_history``) is saved too, so that ``colbench view`` draws the training
    curves of every run, not only of runs that kept checkpoints."""
    out.mkdir(parents=True, exist_ok=True)
    trainer.save_model(str(out))
    trainer.save_state()  # writes into args.output_dir (== out) on the main process only
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(out))

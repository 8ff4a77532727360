"""The trainer plugin API: a config dataclass, a plugin class, registration.

A trainer plugin is a class with a ``name``, a ``config_class`` (a dataclass whose fields carry
their help text in ``metadata["help"]``) and a ``train`` method. ``colbench train NAME`` builds
the config from the dataclass defaults, then a YAML file (``--config``), then command-line
flags (one per field), checks the data and the model before anything heavy happens, and calls
``train``. See ``trainers/README.md`` for a walk-through.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from colbench import registry
from colbench.errors import ConfigError

if TYPE_CHECKING:
    from colbench.trainers.data import TrajectoryData
    from colbench.trainers.model_io import ModelSource


def setting(text: str, **kwargs: Any) -> Any:
    """A dataclass field whose help text feeds the CLI flag and the YAML documentation."""
    metadata = {"help": text}
    if "metadata" in kwargs:
        metadata.update(kwargs.pop("metadata"))
    return field(metadata=metadata, **kwargs)


@dataclass
class TrainerConfig:
    """Settings every built-in trainer shares. Subclass it for a trainer's own settings.

    Anything TRL's config takes and these fields leave out goes in ``trl_args`` (a mapping
    passed to TRL's ``SFTConfig``/``DPOConfig`` as keyword arguments), so every TRL option,
    including ``fsdp`` and ``deepspeed``, stays reachable from a YAML file.
    """

    learning_rate: float = setting("peak learning rate of the optimiser", default=1e-5)
    num_train_epochs: float = setting("passes over the training data", default=1.0)
    max_steps: int = setting("stop after this many optimiser steps (-1: run all epochs)",
                           default=-1)
    per_device_train_batch_size: int = setting("examples (or pairs) per device per step",
                                             default=4)
    gradient_accumulation_steps: int = setting("micro-batches summed into each optimiser step",
                                             default=1)
    max_length: int | None = setting("truncate training sequences to this many tokens "
                                   "(null: no limit)", default=4096)
    warmup_steps: float = setting("linear learning-rate warm-up: steps, or a fraction of all "
                                "steps when below 1", default=0.0)
    lr_scheduler_type: str = setting("learning-rate schedule (a transformers scheduler name)",
                                   default="linear")
    seed: int = setting("seed for shuffling, sampling and initialisation", default=0)
    bf16: bool | None = setting("bfloat16 mixed precision (null: on when a CUDA GPU supports it)",
                              default=None)
    gradient_checkpointing: bool = setting("recompute activations to save memory", default=True)
    logging_steps: int = setting("log every N steps", default=10)
    save_steps: int | None = setting("also save a checkpoint every N steps (null: only at the "
                                   "end)", default=None)
    lora: bool = setting("train a LoRA adapter (PEFT) instead of every weight", default=False)
    lora_r: int = setting("LoRA rank", default=16)
    lora_alpha: int = setting("LoRA scaling numerator (alpha / r scales the update)", default=32)
    lora_dropout: float = setting("dropout on the LoRA branch", default=0.05)
    lora_target_modules: list[str] | None = setting(
        "module names LoRA wraps (null: every linear layer but the output head)", default=None)
    dtype: str = setting("weights' dtype when loading: auto, float32, bfloat16 or float16",
                       default="auto")
    trust_remote_code: bool = setting("let transformers run code shipped with the checkpoint",
                                    default=False)
    trl_args: dict[str, Any] = setting(
        "extra keyword arguments for TRL's SFTConfig/DPOConfig (e.g. {fsdp: 'full_shard'})",
        default_factory=dict)

    def __post_init__(self) -> None:
        positive = ("per_device_train_batch_size", "gradient_accumulation_steps", "lora_r",
                    "lora_alpha", "logging_steps")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise ConfigError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.num_train_epochs <= 0 and self.max_steps <= 0:
            raise ConfigError("num_train_epochs must be positive (or set max_steps)")
        if self.max_length is not None and self.max_length < 8:
            raise ConfigError(f"max_length must be at least 8 tokens, got {self.max_length}")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ConfigError(f"lora_dropout must be in [0, 1), got {self.lora_dropout}")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ConfigError(f"dtype must be auto, float32, bfloat16 or float16, got "
                              f"{self.dtype!r}")
        if not isinstance(self.trl_args, dict):
            raise ConfigError("trl_args must be a mapping of TRL config keyword arguments")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TrainResult:
    """What a trainer wrote: the checkpoint (or adapter) folder and its final metrics."""

    path: Path
    metrics: dict[str, Any] = field(default_factory=dict)
    #: Whether ``path`` holds a PEFT adapter (``hf:PATH`` loads both kinds).
    adapter: bool = False
    #: Other artefacts worth naming (a SWEET-RL critic, generated pairs), by role.
    artefacts: dict[str, Path] = field(default_factory=dict)


class TrainerPlugin(abc.ABC):
    """Base class of trainer plugins.

    Subclasses set ``name`` and ``config_class`` and implement :meth:`train`. They may
    override :meth:`validate` to reject data they cannot use; it runs before the model is
    loaded, so bad input fails in seconds rather than after a model download.
    """

    #: The name ``colbench train NAME`` uses.
    name: ClassVar[str] = ""
    #: The config dataclass (a subclass of :class:`TrainerConfig` for the built-ins).
    config_class: ClassVar[type] = TrainerConfig
    #: One line for ``colbench list trainers`` and ``colbench train NAME --help``.
    summary: ClassVar[str] = ""
    #: Whether the trainer learns from collected trajectories (``--data`` is then required).
    needs_data: ClassVar[bool] = True

    def __init__(self, config: Any | None = None) -> None:
        self.config = config if config is not None else self.config_class()
        if not isinstance(self.config, self.config_class):
            raise ConfigError(f"trainer {self.name!r} takes a {self.config_class.__name__}, got "
                              f"{type(self.config).__name__}")

    def validate(self, data: TrajectoryData | None) -> None:
        """Raise :class:`ConfigError` if ``data`` cannot train this trainer. The base class
        accepts any data that loaded (non-empty, one env)."""
        return None

    @abc.abstractmethod
    def train(self, model: ModelSource, data: TrajectoryData | None, out: Path) -> TrainResult:
        """Train from ``model`` on ``data`` and write the result under ``out``."""


def register_trainer(cls: type[TrainerPlugin]) -> type[TrainerPlugin]:
    """Class decorator: register a trainer defined in the running process (an experiment in a
    notebook or a script) under ``cls.name``. A trainer that is installed (colbench's own
    included) registers once, by an entry point of ``colbench.trainers``, instead.

    Parameters
    ----------
    cls:
        The :class:`TrainerPlugin` subclass; its ``name`` and dataclass ``config_class`` are
        checked (ConfigError naming the class).
    """
    if not cls.name:
        raise ConfigError(f"trainer class {cls.__qualname__} has no name")
    if not dataclasses.is_dataclass(cls.config_class):
        raise ConfigError(f"trainer {cls.name!r}: config_class must be a dataclass")
    registry.trainers.register(cls.name, cls, source="builtin" if cls.__module__.startswith(
        "colbench.trainers") else f"module {cls.__module__}")
    return cls


def resolve_trainer(name: str) -> type[TrainerPlugin]:
    """The trainer class registered (or declared by an entry point) under ``name``."""
    obj = registry.trainers.get(name)
    if not isinstance(obj, type) or not callable(getattr(obj, "train", None)):
        raise ConfigError(f"trainer {name!r} is {obj!r}, not a trainer class with a train() "
                          "method")
    config_class = getattr(obj, "config_class", None)
    if config_class is None or not dataclasses.is_dataclass(config_class):
        raise ConfigError(f"trainer {name!r} ({obj.__module__}.{obj.__qualname__}) has no "
                          "config_class dataclass")
    return obj

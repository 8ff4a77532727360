"""Named presets of a trainer's settings (``--preset paper``), and the optimiser settings the
published presets need.

A preset is a named mapping of setting: value that sits between a config's defaults and what
the user gives: defaults < preset < YAML file < flags (or keyword arguments in Python). So
``colbench train sweet-rl --preset paper --learning-rate 1e-6`` runs the paper's values with
one learning rate of the user's, and the record of the run says both.

Why the preset is applied when the config is constructed (by :class:`PresetConfigMeta`)
rather than by the CLI: the same object serves the CLI, YAML files and Python, so
``SweetRLConfig(preset="paper")`` must mean what ``--preset paper`` means. Only the
constructor still knows which settings were given explicitly; ``__post_init__`` sees the
defaults filled in already and could not tell a default from a deliberate choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from colbench.errors import ConfigError
from colbench.trainers.base import TrainerConfig, setting


class PresetConfigMeta(type):
    """Metaclass of configs with presets: ``Config(preset=NAME, **given)`` constructs
    ``Config(**{**presets[NAME], **given})`` (module docs)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        name = kwargs.get("preset")
        if name is not None:
            values = cls.preset_values(name)  # type: ignore[attr-defined]
            # Fields given positionally are given too; a preset never overrides them.
            positional = {f.name for f in dataclasses.fields(cls)[:len(args)]}  # type: ignore[arg-type]
            kwargs = {**{k: v for k, v in values.items() if k not in positional}, **kwargs}
        return super().__call__(*args, **kwargs)


@dataclass
class PresetTrainerConfig(TrainerConfig, metaclass=PresetConfigMeta):
    """A :class:`TrainerConfig` with named presets and Adam's betas and the schedule's
    arguments, which the published training recipes set and TRL's defaults do not match.

    Subclasses list their presets in ``PRESETS`` (name -> setting: value); each value is
    checked like any other setting when the config is built.
    """

    #: Preset name -> settings. Every name a preset sets must be a field of the config.
    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    preset: str | None = setting(
        "a named set of settings applied under the ones you give (paper: the values of the "
        "paper and its released training code; see trainers/README.md); explicit settings "
        "override it", default=None)
    adam_beta1: float = setting("Adam's beta1 (decay of the mean of the gradients)",
                                default=0.9)
    adam_beta2: float = setting("Adam's beta2 (decay of the mean of the squared gradients; "
                                "the released SWEET-RL code uses 0.95)", default=0.999)
    lr_scheduler_kwargs: dict[str, Any] = setting(
        "extra arguments of the learning-rate schedule (e.g. {min_lr_rate: 0.1} for "
        "cosine_with_min_lr: decay to 0.1 x the peak)", default_factory=dict)

    @classmethod
    def preset_names(cls) -> list[str]:
        return sorted(cls.PRESETS)

    @classmethod
    def preset_values(cls, name: str) -> dict[str, Any]:
        """The settings of preset ``name``; an unknown name is an error listing the known."""
        if not isinstance(name, str) or name not in cls.PRESETS:
            known = ", ".join(cls.preset_names()) or "none"
            raise ConfigError(f"{cls.__name__} has no preset {name!r} (presets: {known})")
        values = dict(cls.PRESETS[name])
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:  # a programming error in PRESETS, said plainly
            raise ConfigError(f"{cls.__name__} preset {name!r} sets unknown settings: "
                              f"{', '.join(unknown)}")
        # Copies, so that a config never shares a list or a mapping with the preset table.
        return {key: (dict(value) if isinstance(value, Mapping)
                      else list(value) if isinstance(value, (list, tuple)) else value)
                for key, value in values.items()}

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.preset is not None:
            self.preset_values(self.preset)  # an unknown name fails here too
        for name in ("adam_beta1", "adam_beta2"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {value}")
        if not isinstance(self.lr_scheduler_kwargs, dict):
            raise ConfigError("lr_scheduler_kwargs must be a mapping of the schedule's "
                              "keyword arguments")

    def preset_overrides(self) -> dict[str, Any]:
        """The settings that differ from the preset's (empty without a preset): what a
        model card must say besides the preset's name."""
        if self.preset is None:
            return {}
        return {key: getattr(self, key) for key, value in self.preset_values(self.preset).items()
                if getattr(self, key) != value}

    def preset_note(self) -> str:
        """One sentence for a model card: the preset and what was changed from it."""
        if self.preset is None:
            return ""
        changed = self.preset_overrides()
        if not changed:
            return f"Settings: preset `{self.preset}`, unchanged."
        listed = ", ".join(f"{key}={value!r}" for key, value in sorted(changed.items()))
        return f"Settings: preset `{self.preset}`, with {listed}."

    def optimiser_arguments(self) -> dict[str, Any]:
        """Keyword arguments of TRL's configs for the settings this class adds."""
        args: dict[str, Any] = {"adam_beta1": self.adam_beta1, "adam_beta2": self.adam_beta2}
        if self.lr_scheduler_kwargs:
            args["lr_scheduler_kwargs"] = dict(self.lr_scheduler_kwargs)
        return args


#: The optimisation values of the released SWEET-RL training commands (its OpenRLHF fork's
#: ``train_dpo``): the global batch of 8 pairs as micro-batches of 1 (one device: accumulate
#: 8; with N devices set gradient_accumulation_steps to 8 / N), a cosine schedule that decays
#: to 0.1 x the peak after a 3% warm-up, and Adam with betas (0.9, 0.95). Weight decay 0 and
#: gradient clipping at 1.0 are TRL's defaults already.
RELEASED_OPTIMISATION: Mapping[str, Any] = {
    "per_device_train_batch_size": 1,
    "gradient_accumulation_steps": 8,
    "lr_scheduler_type": "cosine_with_min_lr",
    "lr_scheduler_kwargs": {"min_lr_rate": 0.1},
    "warmup_steps": 0.03,
    "adam_beta1": 0.9,
    "adam_beta2": 0.95,
}

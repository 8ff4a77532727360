"""Models in and out of a trainer: the ``--model`` spec, loading, LoRA, saving, model cards.

Trainers take the ``hf:`` spec that ``colbench evaluate`` takes (``hf:PATH_OR_ID``, with the
options ``adapter=``, ``dtype=`` and ``trust_remote_code=``), or a bare path or hub id, and
write what ``hf:OUT`` loads back: a full checkpoint, or a PEFT adapter whose
``adapter_config.json`` names its base model. Either way the tokenizer is saved beside it, and
a ``README.md`` model card says how it was made.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError, MissingExtraError
from colbench.models.hf_spec import DTYPES, HFSource, looks_like_path, parse_hf_spec
from colbench.models.hf_spec import KIND as HF_KIND

#: The ``hf:`` options a trainer understands; sampling and batching options are irrelevant here.
_TRAIN_OPTIONS = ("adapter", "dtype", "trust_remote_code", "device", "batch_size", "batch_wait")

#: Where a trainer's starting weights come from: the core's reading of an ``hf:`` spec
#: (``spec``, ``base``, ``adapter``, ``options``, ``is_local``), under the trainers' own name.
ModelSource = HFSource


def parse_model_spec(spec: str) -> ModelSource:
    """``hf:PATH_OR_ID[?options]`` (or a bare path or hub id) -> :class:`ModelSource`.

    The weights are found as ``colbench evaluate`` finds them
    (:func:`colbench.models.hf_spec.parse_hf_spec`), so a trainer starts from exactly the
    model the spec evaluates. Other kinds (``openai:``, ``scripted:``...) have no weights to
    train: that is an error naming the spec, as is an option that means nothing to a trainer.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("--model is empty; give hf:PATH_OR_ID")
    kind, sep, _ = spec.partition(":")
    if sep and kind != HF_KIND and not looks_like_path(spec) and "/" not in kind:
        raise ConfigError(f"model spec {spec!r} has no weights a trainer can update; trainers "
                          "take a local transformers model: hf:PATH_OR_ID")
    # A bare path or hub id means the same as with the hf: prefix.
    source = parse_hf_spec(spec if sep and kind == HF_KIND else f"{HF_KIND}:{spec}",
                           label=f"model spec {spec!r}:")
    unknown = sorted(set(source.options) - set(_TRAIN_OPTIONS))
    if unknown:
        raise ConfigError(f"model spec {spec!r}: option(s) {', '.join(unknown)} mean nothing "
                          f"to a trainer (known: {', '.join(_TRAIN_OPTIONS)})")
    return dataclasses.replace(source, spec=spec)


def _transformers() -> Any:
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as exc:
        raise MissingExtraError("colbench trainers", "train", exc.name) from exc
    return transformers


def check_model_source(source: ModelSource, *, trust_remote_code: bool = False) -> None:
    """Load the model's config and tokenizer (cheap) so that a spec that cannot be loaded
    fails before any data is prepared or any weight is read."""
    transformers = _transformers()
    try:
        config = transformers.AutoConfig.from_pretrained(source.base,
                                                         trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load model {source.spec!r}: {exc}") from exc
    if not any(arch.endswith("ForCausalLM") for arch in (config.architectures or [])) and \
            type(config) not in transformers.AutoModelForCausalLM._model_mapping:
        raise ConfigError(f"model {source.spec!r} is a {config.model_type} model without a "
                          "causal language-model head; trainers need one")
    load_tokenizer(source, trust_remote_code=trust_remote_code)


def load_tokenizer(source: ModelSource, *, trust_remote_code: bool = False) -> Any:
    transformers = _transformers()
    origin = source.base
    if source.adapter and os.path.isfile(os.path.join(source.adapter, "tokenizer_config.json")):
        origin = source.adapter
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            origin, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"cannot load the tokenizer of {source.spec!r}: {exc}") from exc
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ConfigError(f"the tokenizer of {source.spec!r} has neither a pad nor an eos "
                              "token")
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def resolve_dtype(name: str) -> Any:
    """``auto`` is float32, as TRL loads models for training (bf16 then runs as mixed
    precision); the other names are torch dtypes."""
    import torch

    if name == "auto":
        return torch.float32
    if name not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return getattr(torch, name)


def load_causal_lm(source: ModelSource, *, dtype: str = "auto",
                   trust_remote_code: bool = False) -> Any:
    """The model to train, on the CPU (the trainer places it). An adapter in the spec is
    merged into its base, so training starts from exactly the model the spec evaluates."""
    transformers = _transformers()
    dtype = source.options.get("dtype", dtype)
    trust = trust_remote_code or source.options.get("trust_remote_code", "").lower() in (
        "1", "true", "yes", "on")
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            source.base, dtype=resolve_dtype(dtype), trust_remote_code=trust)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load model {source.spec!r}: {exc}") from exc
    if source.adapter:
        try:
            import peft
        except ImportError as exc:
            raise MissingExtraError("training from a PEFT adapter", "train", "peft") from exc
        model = peft.PeftModel.from_pretrained(model, source.adapter).merge_and_unload()
        # The merged weights are no longer ``base``: a reference model must not be re-read
        # from there (callers pass the reference model themselves).
    return model


def lora_config(config: Any) -> Any:
    """The PEFT ``LoraConfig`` for a trainer config with ``lora`` on, else None."""
    if not getattr(config, "lora", False):
        return None
    try:
        from peft import LoraConfig
    except ImportError as exc:
        raise MissingExtraError("--lora", "train", "peft") from exc
    targets = config.lora_target_modules or "all-linear"
    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                      lora_dropout=config.lora_dropout, target_modules=targets,
                      task_type="CAUSAL_LM")


def check_lora_source(source: ModelSource, config: Any) -> None:
    """A new adapter is saved against its base model; a base that only exists merged in
    memory could not be loaded back."""
    if getattr(config, "lora", False) and source.adapter:
        raise ConfigError(f"--lora on {source.spec!r}: the model is an adapter over "
                          f"{source.base}; merge it into a full checkpoint first, or train "
                          "without --lora")


# -- model cards ----------------------------------------------------------------------------

def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("colbench", "trl", "transformers", "peft", "torch", "datasets", "accelerate"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def write_model_card(out: Path, *, trainer: str, source: ModelSource, data_text: str,
                     config: Any, adapter: bool, summary: str = "", method: str = "",
                     metrics: dict[str, Any] | None = None) -> Path:
    """``out/README.md``: what was trained, from what, on what, how, and how to use it."""
    from colbench.trainers.config_io import config_to_yaml

    base_id = None if source.is_local else source.base
    front = ["---"]
    if base_id:
        front.append(f"base_model: {base_id}")
    front.append(f"library_name: {'peft' if adapter else 'transformers'}")
    front += ["tags:", "- colbench", "- trl", f"- {trainer}"]
    if adapter:
        front.append("- lora")
    front.append("---")
    versions = ", ".join(f"{k} {v}" for k, v in _versions().items())
    kind = "a LoRA adapter (PEFT)" if adapter else "a full checkpoint"
    lines = [
        *front, "",
        f"# {out.name}", "",
        f"This is {kind} trained with colbench's `{trainer}` trainer "
        f"(`colbench train {trainer}`) from `{source.spec}`.",
        "",
    ]
    if summary:
        lines += [summary, ""]
    lines += ["## Use", "", "```bash", f"colbench evaluate ENV_ID --model hf:{out}", "```", ""]
    if adapter:
        lines += [f"The adapter's base model is `{source.base}`; `hf:{out}` loads both.", ""]
    lines += ["## Training data", "", data_text, ""]
    if method:
        lines += ["## Method", "", method, ""]
    if metrics:
        lines += ["## Final metrics", ""]
        lines += [f"- {k}: {v}" for k, v in sorted(metrics.items())]
        lines.append("")
    lines += ["## Configuration", "", "```yaml", config_to_yaml(config).rstrip(), "```", "",
              f"Software: {versions}.", ""]
    path = out / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path

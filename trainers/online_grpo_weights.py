"""Whole weights of a policy whose parameters FSDP shards.

``online-grpo`` copies the trained weights out of the policy for the cross-policy snapshot and
for the copy that overlapped rollouts generate with. Under FSDP each process's module holds a
shard of each parameter only, so ``state_dict()`` or ``deepcopy`` of it would give shards.
Here the shards are gathered the way TRL's own vLLM weight sync gathers them
(``trl.generation.vllm_generation``):

* FSDP 1: ``FullyShardedDataParallel.summon_full_params`` (``writeback=False``) over the whole
  module, whose ``named_parameters`` then yield the whole original parameters;
* FSDP 2 (``fully_shard``): each parameter is a ``DTensor``; ``full_tensor()`` all-gathers it.

DeepSpeed ZeRO-3 is not gathered here: it could not be run on the CPU build machines, so
``online-grpo`` still refuses the copies under it (:func:`~colbench.trainers.online_grpo_trainer
.check_sharding`). The kind is read from the module itself (FSDP wrappers, ``DTensor``
parameters), so the same code serves whatever launched the run (accelerate, TRL,
torchrun). Gathering is a collective: every process must call it at the same point, with
the same module, which ``online-grpo`` does on its training thread at the start of each step.

A gathered copy is whole in every process: it costs the whole model (or, for
:func:`gathered_weights` with ``trained_only``, the whole trained weights: the adapter under
LoRA) on each device, which is what a snapshot that generates on its own needs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from colbench.errors import ConfigError

FSDP1 = "fsdp1"
FSDP2 = "fsdp2"
#: Prefixes that wrappers add to parameter names, removed so that names match the plain model.
WRAPPER_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")


def sharding_of(model: Any) -> str | None:
    """How ``model``'s parameters are sharded: :data:`FSDP1`, :data:`FSDP2`, or None when
    each process holds them whole (or another scheme shards them: see the module docs).

    Parameters
    ----------
    model:
        The policy as the trainer holds it (unwrapped by accelerate, or not).
    """
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.tensor import DTensor

    if any(isinstance(module, FullyShardedDataParallel) for module in model.modules()):
        return FSDP1
    if any(isinstance(parameter, DTensor) for parameter in model.parameters()):
        return FSDP2
    return None


def copy_source(accelerator: Any, wrapped: Any) -> Any:
    """The module the copies are gathered from: FSDP 1's root wrapper itself (the root's own
    parameters, embeddings included, live in its flat parameter, which only the wrapper can
    summon), otherwise the model as accelerate unwraps it.

    Parameters
    ----------
    accelerator:
        The run's ``accelerate.Accelerator``.
    wrapped:
        The model as training runs it (TRL's ``trainer.model_wrapped``).
    """
    from torch.distributed.fsdp import FullyShardedDataParallel

    if isinstance(wrapped, FullyShardedDataParallel):
        return wrapped
    return accelerator.unwrap_model(wrapped)


def clean_name(name: str) -> str:
    """A parameter's name without the wrappers' prefixes (:data:`WRAPPER_PREFIXES`)."""
    for prefix in WRAPPER_PREFIXES:
        name = name.replace(prefix, "")
    return name


@contextmanager
def _whole_parameters(model: Any, kind: str | None) -> Iterator[None]:
    """FSDP 1 shows whole parameters inside ``summon_full_params``; the others need nothing
    around the loop (they gather per parameter)."""
    if kind != FSDP1:
        yield
        return
    from torch.distributed.fsdp import FullyShardedDataParallel

    with FullyShardedDataParallel.summon_full_params(model, writeback=False, recurse=True):
        yield


def _whole(parameter: Any) -> Any:
    """A detached whole copy of one parameter (a collective under FSDP 2)."""
    from torch.distributed.tensor import DTensor

    if isinstance(parameter, DTensor):
        return parameter.full_tensor().detach()
    return parameter.detach().clone()


def gathered_weights(model: Any, *, trained_only: bool) -> dict[str, Any]:
    """Whole copies of ``model``'s parameters (those that require gradients only, with
    ``trained_only``) and of its buffers, by their plain names, on the parameters' device.

    Parameters
    ----------
    model:
        A sharded or whole policy (module docs). Every process must call this together.
    trained_only:
        Leave out parameters that do not train (a LoRA model's base weights), which never
        change and need not be copied again.
    """
    kind = sharding_of(model)
    weights: dict[str, Any] = {}
    with _whole_parameters(model, kind):
        for name, parameter in model.named_parameters():
            if trained_only and not parameter.requires_grad:
                continue  # the same on every process: the collectives stay in step
            weights[clean_name(name)] = _whole(parameter)
        for name, buffer in persistent_buffers(model):
            weights[name] = _whole(buffer)
    return weights


def persistent_buffers(model: Any) -> list[tuple[str, Any]]:
    """``model``'s buffers that its ``state_dict`` holds, by plain name (a rotary table
    computed at construction is not one)."""
    found = []
    for prefix, module in model.named_modules():
        for name, buffer in module._buffers.items():
            if buffer is not None and name not in module._non_persistent_buffers_set:
                found.append((clean_name(f"{prefix}.{name}" if prefix else name), buffer))
    return found


def trained_names(model: Any) -> set[str]:
    """Plain names of the parameters of ``model`` that train."""
    return {clean_name(name) for name, parameter in model.named_parameters()
            if parameter.requires_grad}


def _plain_class(module: Any) -> type:
    """The model's own class: FSDP 2 swaps a sharded module's class for a subclass of it."""
    from torch.distributed.fsdp import FSDPModule

    for cls in type(module).__mro__:
        if not issubclass(cls, FSDPModule):
            return cls
    raise ConfigError(f"cannot tell the model class of {type(module).__name__}")


def _empty_like(model: Any) -> Any:
    """A new unsharded module of ``model``'s architecture (and LoRA adapter), weights not
    loaded."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    while isinstance(model, FullyShardedDataParallel):  # FSDP 1's wrapper of the root
        model = model.module
    adapter = None
    base = model
    if hasattr(model, "peft_config") and hasattr(model, "get_base_model"):
        adapter = model.peft_config[model.active_adapter]
        base = model.get_base_model()
    fresh = _plain_class(base)(copy.deepcopy(base.config))
    if getattr(base, "generation_config", None) is not None:
        fresh.generation_config = copy.deepcopy(base.generation_config)
    if adapter is not None:
        from peft import get_peft_model

        fresh = get_peft_model(fresh, copy.deepcopy(adapter))
    return fresh


def unsharded_copy(model: Any) -> tuple[Any, set[str]]:
    """A whole, unsharded copy of a sharded ``model`` (every process gets one) and the names
    of the weights that later refreshes must bring (trained parameters and buffers).

    Parameters
    ----------
    model:
        A policy sharded by FSDP (:func:`sharding_of` is not None). Every process must call
        this together.
    """
    weights = gathered_weights(model, trained_only=False)
    fresh = _empty_like(model)
    floating = next((v for v in weights.values() if v.is_floating_point()), None)
    if floating is not None:
        fresh.to(device=floating.device, dtype=floating.dtype)
    kept = set(fresh.state_dict())
    missing = sorted(name for name, _ in fresh.named_parameters() if name not in weights)
    if missing:
        raise ConfigError(f"gathering the sharded policy gave no weight {missing[0]!r} (and "
                          f"{len(missing) - 1} more) for its unsharded copy")
    fresh.load_state_dict({k: v for k, v in weights.items() if k in kept}, strict=False)
    buffers = {name for name, _ in persistent_buffers(model)}
    own = (trained_names(model) | buffers) & kept
    return fresh, own

"""The shape of a decoder-only transformer: what the memory model and the profiler need.

A :class:`ModelShape` is read from a Hugging Face ``config.json`` (a local folder, or a hub id
through ``transformers.AutoConfig``) and never from the weights, so a profile and a memory
estimate need no checkpoint. :data:`ARCHITECTURES` holds a few real shapes under short names,
so that the GPU script can write a ``config.json`` and profile that architecture with vLLM's
dummy weights on a machine that cannot download anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError, MissingExtraError
from colbench.plugins.dynamic_tp.jsonfile import read_object

#: Bytes per element of the dtypes a config may name (``torch_dtype`` or ``dtype``).
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2,
               "float8": 1, "fp8": 1}


@dataclass(frozen=True)
class ModelShape:
    """The sizes that set a dense decoder's weight, KV-cache and activation memory.

    ``num_kv_heads`` below ``num_heads`` is grouped-query attention; ``head_dim`` defaults to
    ``hidden_size // num_heads`` as in Llama. The MLP is gated (three matrices), as in every
    architecture of :data:`ARCHITECTURES`.
    """

    name: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int
    dtype_bytes: int = 2
    tie_embeddings: bool = False
    head_dim: int = 0

    def __post_init__(self) -> None:
        for field_name in ("num_layers", "hidden_size", "num_heads", "num_kv_heads",
                           "intermediate_size", "vocab_size", "dtype_bytes"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"model shape {self.name!r}: {field_name}={value!r} must be "
                                  "a positive integer")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(f"model shape {self.name!r}: num_heads={self.num_heads} is not a "
                              f"multiple of num_kv_heads={self.num_kv_heads}")
        if not self.head_dim:
            if self.hidden_size % self.num_heads:
                raise ConfigError(f"model shape {self.name!r}: hidden_size={self.hidden_size} "
                                  f"is not a multiple of num_heads={self.num_heads}; give "
                                  "head_dim")
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)

    @property
    def num_parameters(self) -> int:
        """Parameters of the whole model (embeddings, attention, gated MLP, norms, head)."""
        q_and_o = 2 * self.hidden_size * self.num_heads * self.head_dim
        k_and_v = 2 * self.hidden_size * self.num_kv_heads * self.head_dim
        mlp = 3 * self.hidden_size * self.intermediate_size
        per_layer = q_and_o + k_and_v + mlp + 2 * self.hidden_size
        embeddings = self.vocab_size * self.hidden_size
        head = 0 if self.tie_embeddings else embeddings
        return self.num_layers * per_layer + embeddings + head + self.hidden_size

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any], name: str = "model") -> ModelShape:
        """Read the sizes of a ``config.json`` (Llama, Qwen2, Mistral and their kin)."""
        def need(key: str, *aliases: str) -> int:
            for candidate in (key, *aliases):
                if config.get(candidate) is not None:
                    return int(config[candidate])
            raise ConfigError(f"model config of {name!r} has no {key!r}; the memory model "
                              "needs it (is this a decoder-only transformer's config.json?)")

        dtype_name = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
        dtype_name = dtype_name.removeprefix("torch.")
        if dtype_name not in DTYPE_BYTES:
            raise ConfigError(f"model config of {name!r}: dtype {dtype_name!r} is not one of "
                              f"{', '.join(sorted(DTYPE_BYTES))}")
        num_heads = need("num_attention_heads", "n_head")
        return cls(
            name=name,
            num_layers=need("num_hidden_layers", "n_layer"),
            hidden_size=need("hidden_size", "n_embd"),
            num_heads=num_heads,
            num_kv_heads=int(config.get("num_key_value_heads") or num_heads),
            intermediate_size=need("intermediate_size"),
            vocab_size=need("vocab_size"),
            dtype_bytes=DTYPE_BYTES[dtype_name],
            tie_embeddings=bool(config.get("tie_word_embeddings", False)),
            head_dim=int(config.get("head_dim") or 0),
        )

    @classmethod
    def from_pretrained(cls, path_or_id: str) -> ModelShape:
        """The shape of a local model folder, a hub id, or a name in :data:`ARCHITECTURES`."""
        if path_or_id in ARCHITECTURES:
            return ARCHITECTURES[path_or_id]
        folder = Path(path_or_id).expanduser()
        if folder.is_dir():
            config_file = folder / "config.json"
            if not config_file.is_file():
                raise ConfigError(f"model folder {str(folder)!r} has no config.json")
            return cls.from_hf_config(read_object(config_file, "model config"), name=path_or_id)
        try:
            from transformers import AutoConfig
        except ImportError as exc:
            raise MissingExtraError("reading a hub model's config", "hf", exc.name) from exc
        try:
            config = AutoConfig.from_pretrained(path_or_id).to_dict()
        except OSError as exc:
            raise ConfigError(f"cannot read the config of model {path_or_id!r}: {exc}") from exc
        text_config = config.get("text_config") or config
        return cls.from_hf_config(text_config, name=path_or_id)

    def to_llama_config(self) -> dict[str, Any]:
        """A ``config.json`` for a Llama model of this shape (what vLLM's dummy weights load).

        Written by the GPU script so that a real architecture is profiled offline: vLLM
        builds the model from this config and fills it with random weights.
        """
        dtype = {4: "float32", 2: "bfloat16", 1: "float8"}[self.dtype_bytes]
        return {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "num_hidden_layers": self.num_layers, "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_heads, "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim, "intermediate_size": self.intermediate_size,
            "vocab_size": self.vocab_size, "torch_dtype": dtype,
            "tie_word_embeddings": self.tie_embeddings, "hidden_act": "silu",
            "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
            "bos_token_id": 1, "eos_token_id": 2,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Real architectures by short name (sizes from their published configs).
ARCHITECTURES: dict[str, ModelShape] = {
    shape.name: shape for shape in (
        ModelShape("llama-3.2-1b", num_layers=16, hidden_size=2048, num_heads=32,
                   num_kv_heads=8, intermediate_size=8192, vocab_size=128256,
                   tie_embeddings=True, head_dim=64),
        ModelShape("llama-3.1-8b", num_layers=32, hidden_size=4096, num_heads=32,
                   num_kv_heads=8, intermediate_size=14336, vocab_size=128256),
        ModelShape("llama-3.1-70b", num_layers=80, hidden_size=8192, num_heads=64,
                   num_kv_heads=8, intermediate_size=28672, vocab_size=128256),
    )
}

"""The model shape read from a config, and the memory model that rules configurations out."""

from __future__ import annotations

import json

import pytest

from colbench.errors import ConfigError
from colbench.plugins.dynamic_tp import ARCHITECTURES, GPUSpec, MemoryModel, ModelShape
from colbench.plugins.dynamic_tp.memory import GIB
from colbench.plugins.dynamic_tp.synthetic import earl_shaped_memory

LLAMA_8B_CONFIG = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
                   "torch_dtype": "bfloat16", "tie_word_embeddings": False}


def test_a_config_gives_the_published_parameter_count():
    shape = ModelShape.from_hf_config(LLAMA_8B_CONFIG, name="llama")
    assert shape.head_dim == 128 and shape.dtype_bytes == 2
    assert shape.num_parameters == pytest.approx(8.03e9, rel=0.01)  # Llama-3.1-8B: 8.03B
    assert ARCHITECTURES["llama-3.1-8b"].num_parameters == shape.num_parameters


def test_a_model_folder_is_read_and_its_llama_config_round_trips(tmp_path):
    shape = ARCHITECTURES["llama-3.2-1b"]
    (tmp_path / "config.json").write_text(json.dumps(shape.to_llama_config()))
    again = ModelShape.from_pretrained(str(tmp_path))
    assert again.num_parameters == shape.num_parameters
    assert again.num_parameters == pytest.approx(1.24e9, rel=0.01)  # Llama-3.2-1B: 1.24B


@pytest.mark.parametrize(("change", "message"), [
    ({"num_hidden_layers": None}, "no 'num_hidden_layers'"),
    ({"torch_dtype": "int3"}, "dtype 'int3'"),
    ({"num_key_value_heads": 5}, "not a multiple of num_kv_heads=5"),
])
def test_a_bad_config_names_what_is_wrong(change, message):
    with pytest.raises(ConfigError, match=message):
        ModelShape.from_hf_config({**LLAMA_8B_CONFIG, **change}, name="bad")


def test_a_folder_without_config_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="has no config.json"):
        ModelShape.from_pretrained(str(tmp_path))


def test_weights_shard_and_kv_heads_are_replicated_beyond_their_number():
    memory = MemoryModel(ARCHITECTURES["llama-3.1-8b"], GPUSpec.gib("H100", 80, count=16))
    assert memory.weight_bytes(2) == pytest.approx(memory.weight_bytes(1) / 2, rel=1e-6)
    # 8 KV heads: the cache per GPU halves up to TP8, then stays (vLLM replicates them).
    assert memory.kv_bytes_per_token(1) == 2 * 32 * 8 * 128 * 2
    assert memory.kv_bytes_per_token(8) == memory.kv_bytes_per_token(1) // 8
    assert memory.kv_bytes_per_token(16) == memory.kv_bytes_per_token(8)


def test_fit_rules_out_what_would_run_out_of_memory():
    memory = MemoryModel(ARCHITECTURES["llama-3.1-8b"], GPUSpec.gib("H100", 80, count=8))
    assert memory.fit(1, 8, 8192)
    big = memory.fit(1, 256, 32768)
    assert not big and "would run out of memory" in big.reason
    assert big.needed_bytes > big.available_bytes
    assert memory.fit(8, 256, 32768).needed_bytes < big.needed_bytes
    # 70B in bf16 is 141 GB: one 80 GB GPU cannot even hold the weights.
    large = MemoryModel(ARCHITECTURES["llama-3.1-70b"], GPUSpec.gib("H100", 80, count=8))
    assert not large.fit(1, 1, 128) and large.fit(4, 1, 128)


@pytest.mark.parametrize(("tp", "why"), [(16, "needs 16 GPUs"), (3, "does not divide"),
                                         (0, "at least 1")])
def test_unsupported_degrees_say_why(tp, why):
    memory = MemoryModel(ARCHITECTURES["llama-3.1-8b"], GPUSpec.gib("H100", 80, count=8))
    fit = memory.fit(tp, 1, 100)
    assert not fit and why in fit.reason


def test_the_earl_shaped_memory_model_has_tp4_out_of_memory_at_128_by_32k():
    memory = earl_shaped_memory()
    assert not memory.fit(4, 128, 32768)
    assert memory.fit(8, 128, 32768)
    assert memory.fit(4, 128, 16384)


def test_bad_gpu_settings_are_rejected():
    with pytest.raises(ConfigError, match="memory_utilization"):
        GPUSpec.gib("x", 80, memory_utilization=1.5)
    with pytest.raises(ConfigError, match="count=0"):
        GPUSpec("x", 80 * GIB, count=0)

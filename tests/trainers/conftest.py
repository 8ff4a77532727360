"""Fixtures of the trainers' tests: tiny models of two families, and collected data.

Every test module here needs colbench[train] (torch, transformers, trl, peft, datasets,
accelerate) and skips itself without it (:func:`require_train`). The hub is never contacted:
models are built in the test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Nothing here may reach the hub (no network in CI); TRL would otherwise ping it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for helpers_env

import helpers_env  # noqa: E402

#: Settings that make any built-in trainer take seconds on a tiny model.
FAST = {"max_steps": 2, "per_device_train_batch_size": 2, "learning_rate": 1e-3,
        "logging_steps": 1, "gradient_checkpointing": False, "max_length": 512}
FAST_FLAGS = ["--max-steps", "2", "--per-device-train-batch-size", "2", "--learning-rate",
              "1e-3", "--logging-steps", "1", "--no-gradient-checkpointing", "--max-length",
              "512"]
SWEET_FAST = {"critic_epochs": 1.0, "num_candidates": 4, "candidate_max_tokens": 4,
              "turn_fraction": 0.2, "critic_learning_rate": 1e-3}
SWEET_FAST_FLAGS = ["--critic-epochs", "1", "--num-candidates", "4", "--candidate-max-tokens",
                    "4", "--turn-fraction", "0.2", "--critic-learning-rate", "1e-3"]
POOL = ["scripted:oracle", "scripted:no-ask", "scripted:asker"]


@pytest.fixture(scope="package", autouse=True)
def one_torch_thread():
    """Tiny models gain nothing from several threads, and on a busy machine torch's worker
    threads spin-waiting for each other made these tests over ten times slower."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from colbench.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_qwen2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from colbench.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"), family="qwen2")


@pytest.fixture(scope="session")
def guess_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Episodes of the tests' guessing env from a pool of scripted agents of three
    qualities (the oracle always succeeds, no-ask rarely, the asker in two turns)."""
    from colbench.trainers import CollectConfig, collect

    out = tmp_path_factory.mktemp("guess-data")
    collect(CollectConfig(env=helpers_env.ENV_ID, models=POOL, out=out, k=3, num_tasks=6,
                          progress=False))
    return out


@pytest.fixture(scope="session")
def fast() -> dict:
    """Config values that make a built-in trainer take seconds on a tiny model."""
    return dict(FAST)


@pytest.fixture(scope="session")
def fast_flags() -> list[str]:
    return list(FAST_FLAGS)


@pytest.fixture(scope="session")
def sweet_fast() -> dict:
    return dict(SWEET_FAST)


@pytest.fixture(scope="session")
def sweet_fast_flags() -> list[str]:
    return list(SWEET_FAST_FLAGS)

"""Fixtures of the frontend suite's tests: one warm renderer for the session, a folder for
renders, and a tiny random CLIP model built here (no weights can be downloaded).

The tests need the ``[frontend]`` extra and Debian's chromium and chromium-driver; without
them they are skipped with the reason (CI installs both).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("selenium", reason="needs colbench[frontend] (selenium)")
pytest.importorskip("PIL", reason="needs colbench[frontend] (pillow)")
pytest.importorskip("numpy", reason="needs colbench[frontend] (numpy)")

from colbench.errors import ConfigError  # noqa: E402
from colbench.frontend.render import Renderer, find_browser  # noqa: E402


def _browser_missing() -> str | None:
    try:
        find_browser()
    except ConfigError as exc:
        return str(exc)
    return None


BROWSER_MISSING = _browser_missing()
needs_browser = pytest.mark.skipif(BROWSER_MISSING is not None,
                                   reason=BROWSER_MISSING or "")


@pytest.fixture(scope="session")
def renderer():
    if BROWSER_MISSING:
        pytest.skip(BROWSER_MISSING)
    r = Renderer(pool_size=2, timeout=10.0)
    yield r
    r.close()


@pytest.fixture(scope="session")
def image_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("renders")


def build_tiny_clip(folder: Path, seed: int = 0) -> Path:
    """A CLIP with random weights, small enough to run in milliseconds, saved with its image
    processor so that it loads through the same ``from_pretrained`` path as the real one.
    ``initializer_factor`` is raised so that random embeddings still tell pages apart."""
    pytest.importorskip("torch", reason="needs colbench[frontend] (torch)")
    pytest.importorskip("transformers", reason="needs colbench[frontend] (transformers)")
    import torch
    from transformers import CLIPConfig, CLIPModel

    try:
        from transformers import CLIPImageProcessorPil as Processor
    except ImportError:
        from transformers import CLIPImageProcessor as Processor

    config = CLIPConfig(
        text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "vocab_size": 100,
                     "max_position_embeddings": 16, "bos_token_id": 0, "eos_token_id": 1,
                     "pad_token_id": 1},
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": 224, "patch_size": 32,
                       "initializer_factor": 5.0},
        projection_dim=32, initializer_factor=5.0)
    torch.manual_seed(seed)
    model = CLIPModel(config).eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    Processor().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="session")
def tiny_clip_factory(tmp_path_factory: pytest.TempPathFactory):
    """Builds more tiny CLIPs: ``factory(seed)`` -> folder."""
    return lambda seed: build_tiny_clip(tmp_path_factory.mktemp(f"tiny-clip-{seed}"), seed)

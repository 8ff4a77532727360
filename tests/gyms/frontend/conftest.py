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
from colbench.gyms.frontend.render import Renderer, find_browser  # noqa: E402


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
    """A tiny random CLIP saved with its image processor (see build_random_clip)."""
    pytest.importorskip("torch", reason="needs colbench[frontend] (torch)")
    pytest.importorskip("transformers", reason="needs colbench[frontend] (transformers)")
    from colbench.gyms.frontend.scoring import build_random_clip

    return build_random_clip(folder, size="tiny", seed=seed)


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="session")
def tiny_clip_factory(tmp_path_factory: pytest.TempPathFactory):
    """Builds more tiny CLIPs: ``factory(seed)`` -> folder."""
    return lambda seed: build_tiny_clip(tmp_path_factory.mktemp(f"tiny-clip-{seed}"), seed)

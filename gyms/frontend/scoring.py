"""Scoring a page: how close the agent's render is to the target's.

Two scorers, registered in ``colbench.registry.scorers`` and chosen with ``--scorer``:

``clip`` (default)
    The published metric: cosine similarity of CLIP image embeddings (``openai/clip-vit-base-
    patch32`` through transformers' ``CLIPModel``, by hub id or local path). Images go through
    the model's own ``CLIPImageProcessor`` as in the reference harness (shortest side to 224,
    centre crop), embeddings are L2-normalised, the score is their dot product. Scoring is
    batched: :meth:`Scorer.similarity` embeds many pairs per forward pass, and concurrent
    :meth:`Scorer.score` calls from several episodes are gathered into one batch. When the
    weights cannot be loaded the scorer raises ConfigError saying how to provide them (a local
    folder, or a hub cache with ``HF_HUB_OFFLINE=1``) or to pick ``--scorer perceptual``; it
    never falls back silently. Weights not in the local cache are downloaded only after one
    quick request finds the hub reachable, so a machine without hub access gets that message
    at once rather than after a minute and a half of retries. No weights can be downloaded on colbench's own machines: its
    tests use a tiny random CLIP built in the test.

``perceptual``
    A weight-free score in [0, 1] (version 1). Both images are scaled to 256 pixels wide
    (keeping their aspect) and stacked on a canvas as tall as the taller one, the rest filled
    with mid-grey (so a missing stretch of page costs the same whatever its colour). The score
    is the mean of three parts:

    * structure: the mean SSIM of the luminance over 8x8 windows (clipped at 0);
    * colour: the intersection of the two 4x4x4-bin RGB histograms;
    * layout: one minus the mean absolute difference of 16x16-pixel block mean colours, /255.

    Identical renders score exactly 1.

A missing answer is scored as a black image of the window's size (:func:`black_image`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError, MissingExtraError
from colbench.registry import scorers

DEFAULT_CLIP_MODEL = "openai/clip-vit-base-patch32"
PERCEPTUAL_WIDTH = 256
PERCEPTUAL_VERSION = "1"


def _require(*modules: str) -> None:
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtraError("frontend scoring", "frontend", module) from exc


def black_image(size: tuple[int, int] | None = None) -> Any:
    """The stand-in for a missing answer: black, the renderer's window size by default."""
    _require("PIL")
    from PIL import Image

    from colbench.gyms.frontend.render.renderer import WINDOW_SIZE

    return Image.new("RGB", tuple(size or WINDOW_SIZE), (0, 0, 0))


class Scorer(ABC):
    """Similarity of answer renders to target renders, each in [0, 1] for pictures of pages
    (CLIP's cosine can in principle be negative; it is reported as is)."""

    name: str = "scorer"
    #: Concurrent :meth:`score` calls wait this long for others to share one batch.
    linger_s: float = 0.0
    max_batch: int = 16

    def __init__(self) -> None:
        self._pending: list[tuple[Any, Any, Future[float]]] = []
        self._pending_lock = threading.Lock()
        self._batch_lock = threading.Lock()

    @abstractmethod
    def similarity(self, answers: Sequence[Any], targets: Sequence[Any]) -> list[float]:
        """Scores of ``answers[i]`` against ``targets[i]`` (PIL images), computed in batches."""

    def score(self, answer: Any, target: Any) -> float:
        """One pair. With ``linger_s`` > 0, pairs from concurrent callers share a batch."""
        if self.linger_s <= 0:
            return self.similarity([answer], [target])[0]
        future: Future[float] = Future()
        with self._pending_lock:
            self._pending.append((answer, target, future))
        # Whoever gets the batch lock first waits briefly, then scores what is pending.
        with self._batch_lock:
            while not future.done():
                threading.Event().wait(self.linger_s)
                with self._pending_lock:
                    batch = self._pending[: self.max_batch]
                    self._pending = self._pending[self.max_batch:]
                try:
                    values = self.similarity([b[0] for b in batch], [b[1] for b in batch])
                except BaseException as exc:
                    for item in batch:
                        item[2].set_exception(exc)
                else:
                    for item, value in zip(batch, values, strict=True):
                        item[2].set_result(value)
        return future.result()

    def weights_hash(self) -> str | None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.name, "scorer_weights_hash": self.weights_hash()}


# -- perceptual ---------------------------------------------------------------------------------

def _scaled(image: Any) -> Any:
    import numpy as np
    from PIL import Image

    image = image.convert("RGB")
    width, height = image.size
    new_height = max(1, round(height * PERCEPTUAL_WIDTH / max(1, width)))
    resized = image.resize((PERCEPTUAL_WIDTH, new_height), Image.BILINEAR)
    return np.asarray(resized, dtype=np.float64)


def _box_mean(x: Any, k: int) -> Any:
    """Means over every k x k window (valid positions), by summed-area tables."""
    import numpy as np

    c = np.cumsum(np.cumsum(np.pad(x, ((1, 0), (1, 0))), axis=0), axis=1)
    return (c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]) / (k * k)


def perceptual_similarity(a: Any, b: Any) -> float:
    """The ``perceptual`` score of two PIL images (see the module docstring)."""
    import numpy as np

    x, y = _scaled(a), _scaled(b)
    height = max(x.shape[0], y.shape[0], 8)
    canvas = []
    for img in (x, y):
        pad = np.full((height, PERCEPTUAL_WIDTH, 3), 128.0)
        pad[: img.shape[0]] = img
        canvas.append(pad)
    x, y = canvas
    weights = np.array([0.299, 0.587, 0.114])
    lx, ly = x @ weights, y @ weights
    k = 8
    mx, my = _box_mean(lx, k), _box_mean(ly, k)
    vx = _box_mean(lx * lx, k) - mx * mx
    vy = _box_mean(ly * ly, k) - my * my
    cov = _box_mean(lx * ly, k) - mx * my
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    ssim_map = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    structure = float(np.clip(ssim_map.mean(), 0.0, 1.0))

    def histogram(img: Any) -> Any:
        bins = np.clip((img // 64).astype(int), 0, 3)
        index = bins[..., 0] * 16 + bins[..., 1] * 4 + bins[..., 2]
        counts = np.bincount(index.ravel(), minlength=64).astype(np.float64)
        return counts / counts.sum()

    colour = float(np.minimum(histogram(x), histogram(y)).sum())
    block = 16
    rows = height // block
    if rows == 0:
        layout = 1.0 - float(np.abs(x.mean((0, 1)) - y.mean((0, 1))).mean()) / 255.0
    else:
        shape = (rows, block, PERCEPTUAL_WIDTH // block, block, 3)
        bx = x[: rows * block].reshape(shape).mean(axis=(1, 3))
        by = y[: rows * block].reshape(shape).mean(axis=(1, 3))
        layout = 1.0 - float(np.abs(bx - by).mean()) / 255.0
    return float(min(1.0, max(0.0, (structure + colour + layout) / 3.0)))


class PerceptualScorer(Scorer):
    """``perceptual``: the weight-free score (see the module docstring)."""

    name = f"perceptual-v{PERCEPTUAL_VERSION}"

    def __init__(self) -> None:
        _require("numpy", "PIL")
        super().__init__()

    def similarity(self, answers: Sequence[Any], targets: Sequence[Any]) -> list[float]:
        if len(answers) != len(targets):
            raise ValueError(f"{len(answers)} answers but {len(targets)} targets")
        return [perceptual_similarity(a, t) for a, t in zip(answers, targets, strict=True)]


# -- CLIP ---------------------------------------------------------------------------------------

def _looks_like_path(source: str) -> bool:
    """A local folder (rather than a hub id like ``openai/clip-vit-base-patch32``)."""
    return source.startswith(("/", "./", "../", "~")) or Path(source).expanduser().is_dir()


def clip_load_help(source: str, reason: str) -> str:
    return (
        f"CLIP weights {source!r} could not be loaded ({reason}). To score with CLIP, provide "
        f"the weights: on a machine with internet run `huggingface-cli download "
        f"{DEFAULT_CLIP_MODEL}` (or save CLIPModel and CLIPImageProcessor with "
        "save_pretrained) and either copy that folder here and pass it "
        "(`--scorer clip:/path/to/folder` or `--env-arg clip_model=/path/to/folder`), or copy "
        "the Hugging Face cache (HF_HOME) here and set HF_HUB_OFFLINE=1. Or score without "
        "weights: `--scorer perceptual`.")


#: How long the hub check before a download waits for the hub to answer, in seconds.
HUB_CHECK_TIMEOUT_S = 5.0


def hub_unreachable_reason(timeout: float = HUB_CHECK_TIMEOUT_S) -> str | None:
    """Why the Hugging Face hub (``HF_ENDPOINT``, else huggingface.co) cannot be reached from
    here, or None when it answers. One request with a short timeout, honouring proxy
    settings: without it a download on a machine without hub access retries for a minute and
    a half, printing every retry, before it fails."""
    import httpx

    endpoint = os.environ.get("HF_ENDPOINT", "").rstrip("/") or "https://huggingface.co"
    try:
        httpx.head(endpoint, timeout=timeout, follow_redirects=False)
    except httpx.HTTPError as exc:  # no route, refused, DNS, timeout, TLS: any answer is fine
        return f"no access to the Hugging Face hub at {endpoint}: {type(exc).__name__}: {exc}"
    return None


class ClipScorer(Scorer):
    """``clip``: cosine similarity of CLIP image embeddings (see the module docstring).

    Parameters
    ----------
    model : str
        CLIP weights: a hub id or a local folder.
    device : str
        The torch device the model runs on.
    batch_size : int
        Images per forward pass (at least 1).
    """

    linger_s = 0.01

    def __init__(self, model: str = DEFAULT_CLIP_MODEL, *, device: str = "cpu",
                 batch_size: int = 16) -> None:
        _require("numpy", "PIL", "torch", "transformers")
        super().__init__()
        import torch
        from transformers import CLIPModel

        try:  # transformers 5 names the PIL-based processor (no torchvision) explicitly
            from transformers import CLIPImageProcessorPil as CLIPImageProcessor
        except ImportError:
            from transformers import CLIPImageProcessor  # type: ignore[assignment]

        self.source = str(model)
        self.device = device
        self.batch_size = self.max_batch = int(batch_size)
        if self.batch_size < 1:
            raise ConfigError(f"CLIP batch_size must be at least 1, got {batch_size}")
        self.name = f"clip:{self.source}"
        local = _looks_like_path(self.source)
        if local and not Path(self.source).expanduser().is_dir():
            raise ConfigError(clip_load_help(self.source, "no such folder"))
        location = str(Path(self.source).expanduser()) if local else self.source
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
        attempts = [True] if (local or offline) else [True, False]
        last: Exception | None = None
        for local_only in attempts:
            if not local_only:  # a download: fail at once, with the help, if there is no hub
                unreachable = hub_unreachable_reason()
                if unreachable is not None:
                    raise ConfigError(clip_load_help(self.source, unreachable[:300])) from last
            try:
                self.model = CLIPModel.from_pretrained(location, local_files_only=local_only)
                self.processor = CLIPImageProcessor.from_pretrained(
                    location, local_files_only=local_only)
                break
            except (OSError, ValueError, KeyError) as exc:
                last = exc
        else:
            reason = str(last).strip().splitlines()[0] if last and str(last).strip() else \
                type(last).__name__
            raise ConfigError(clip_load_help(self.source, reason[:300])) from last
        self.model.eval().to(device)
        self._torch = torch
        self._hash: str | None = None

    def embed(self, images: Sequence[Any]) -> Any:
        """L2-normalised image embeddings, ``batch_size`` images per forward pass."""
        import numpy as np

        torch = self._torch
        out = []
        for start in range(0, len(images), self.batch_size):
            chunk = [im.convert("RGB") for im in images[start:start + self.batch_size]]
            inputs = self.processor(images=chunk, return_tensors="pt")
            with torch.no_grad():
                pixels = inputs["pixel_values"].to(self.device)
                features = self.model.get_image_features(pixel_values=pixels)
                if not isinstance(features, torch.Tensor):
                    # transformers 5 returns an output whose pooler_output is the projection
                    features = features.pooler_output
                features = torch.nn.functional.normalize(features.float(), dim=-1)
            out.append(features.cpu().numpy())
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate(out, axis=0)

    def similarity(self, answers: Sequence[Any], targets: Sequence[Any]) -> list[float]:
        if len(answers) != len(targets):
            raise ValueError(f"{len(answers)} answers but {len(targets)} targets")
        if not answers:
            return []
        embeddings = self.embed(list(answers) + list(targets))
        a, t = embeddings[: len(answers)], embeddings[len(answers):]
        return [float(v) for v in (a * t).sum(axis=1)]

    def weights_hash(self) -> str:
        """``sha256:`` over every parameter and buffer (name, dtype, shape, bytes), so the same
        weights give the same hash whatever file format they came in."""
        if self._hash is None:
            digest = hashlib.sha256()
            for key, tensor in sorted(self.model.state_dict().items()):
                t = tensor.detach().cpu().contiguous()
                digest.update(f"{key}:{t.dtype}:{tuple(t.shape)}".encode())
                digest.update(t.view(-1).view(self._torch.uint8).numpy().tobytes()
                              if t.numel() else b"")
            self._hash = "sha256:" + digest.hexdigest()
        return self._hash


def build_random_clip(folder: str | Path, *, size: str = "tiny", seed: int = 0) -> Path:
    """Save a CLIP with random weights and its image processor to ``folder``, loadable by
    ``--scorer clip:FOLDER`` through the same code as real weights.

    For tests and benchmarks on machines where no weights can be downloaded. ``size="tiny"``
    is a two-layer 64-wide vision tower whose initialisation is scaled up so that random
    embeddings still tell pages apart; ``size="base"`` has ViT-B/32's shape (the compute of
    the real scorer, not its judgement)."""
    _require("torch", "transformers")
    import torch
    from transformers import CLIPConfig, CLIPModel

    try:
        from transformers import CLIPImageProcessorPil as Processor
    except ImportError:
        from transformers import CLIPImageProcessor as Processor  # type: ignore[assignment]

    if size == "tiny":
        config = CLIPConfig(
            text_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                         "num_attention_heads": 2, "vocab_size": 100,
                         "max_position_embeddings": 16, "bos_token_id": 0, "eos_token_id": 1,
                         "pad_token_id": 1},
            vision_config={"hidden_size": 64, "intermediate_size": 128,
                           "num_hidden_layers": 2, "num_attention_heads": 4,
                           "image_size": 224, "patch_size": 32, "initializer_factor": 5.0},
            projection_dim=32, initializer_factor=5.0)
    elif size == "base":
        config = CLIPConfig(text_config={"num_hidden_layers": 1},
                            vision_config={"image_size": 224, "patch_size": 32})
    else:
        raise ConfigError(f"random CLIP size must be 'tiny' or 'base', got {size!r}")
    torch.manual_seed(seed)
    model = CLIPModel(config).eval()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    Processor().save_pretrained(folder)
    return folder


scorers.register("clip", ClipScorer)
scorers.register("perceptual", PerceptualScorer)

_shared: dict[tuple[str, tuple[tuple[str, Any], ...]], Scorer] = {}
_shared_lock = threading.Lock()


def make_scorer(spec: str | Scorer | None = None, **options: Any) -> Scorer:
    """A scorer from a spec: ``"clip"``, ``"clip:PATH_OR_HUB_ID"``, ``"perceptual"``, any
    name in ``colbench.registry.scorers`` or a ``module:Class`` path. Instances are shared per
    (spec, options) in a process, so that envs in a pool load CLIP once."""
    if isinstance(spec, Scorer):
        return spec
    spec = spec or "clip"
    if not isinstance(spec, str):
        raise ConfigError(f"scorer must be a name or a Scorer, got {type(spec).__name__}")
    key = (spec, tuple(sorted(options.items())))
    with _shared_lock:
        if key in _shared:
            return _shared[key]
        name, _, argument = spec.partition(":")
        if name == "clip":
            model = argument or options.pop("model", None) or DEFAULT_CLIP_MODEL
            scorer: Scorer = ClipScorer(model, **options)
        else:
            # a registered name or module:Class; a miss raises with "did you mean"
            scorer = scorers.get(spec)(**options)
        if not hasattr(scorer, "similarity") or not hasattr(scorer, "score"):
            raise ConfigError(f"scorer {spec!r} built {type(scorer).__name__}, which has no "
                              "similarity()")
        _shared[key] = scorer
        return scorer

"""Scorers: the real CLIP path on a tiny random CLIP, the weight-free perceptual score, the
black image for a missing answer, and the message when CLIP weights cannot be loaded."""

from __future__ import annotations

import threading

import pytest
from PIL import Image, ImageDraw

from colbench import registry
from colbench.errors import ConfigError
from colbench.gyms.frontend.scoring import (
    ClipScorer,
    PerceptualScorer,
    black_image,
    make_scorer,
    perceptual_similarity,
)


def page_like(seed: int, height: int = 1200) -> Image.Image:
    """A picture with the look of a page: coloured bands and blocks, varying with ``seed``."""
    image = Image.new("RGB", (1366, height), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    y = 0
    for band in range(6):
        h = 120 + ((seed * 37 + band * 53) % 160)
        colour = ((seed * 70 + band * 40) % 256, (seed * 30 + band * 90) % 256,
                  (seed * 110 + band * 20) % 256)
        draw.rectangle([0, y, 1366, y + h], fill=colour)
        for k in range((seed + band) % 4 + 1):
            draw.rectangle([100 + k * 300, y + 20, 340 + k * 300, y + h - 20],
                           fill=(255 - colour[0], 240, 250 - colour[2] // 2))
        y += h
    return image


def test_perceptual_identical_is_one_and_different_is_lower():
    a, b = page_like(1), page_like(2)
    assert perceptual_similarity(a, a) == 1.0
    assert perceptual_similarity(a, b) < 0.9
    assert perceptual_similarity(a, black_image()) < perceptual_similarity(a, b)
    assert 0.0 <= perceptual_similarity(black_image(), a) <= 1.0
    assert perceptual_similarity(a, b) == pytest.approx(perceptual_similarity(b, a))


def test_perceptual_is_a_registered_scorer_without_weights():
    scorer = make_scorer("perceptual")
    assert isinstance(scorer, PerceptualScorer)
    assert registry.scorers.get("perceptual") is PerceptualScorer
    assert registry.scorers.get("clip") is ClipScorer
    assert scorer.describe() == {"scorer": "perceptual-v1", "scorer_weights_hash": None}
    assert scorer.similarity([page_like(1)], [page_like(1)]) == [1.0]
    with pytest.raises(ConfigError, match="did you mean 'perceptual'"):
        make_scorer("perceptul")


def test_clip_path_on_a_tiny_random_clip_batched_equals_one_at_a_time(tiny_clip):
    scorer = ClipScorer(str(tiny_clip), batch_size=4)
    answers = [page_like(s) for s in range(6)] + [black_image()]
    targets = [page_like(s + 1) for s in range(6)] + [page_like(3)]
    batched = scorer.similarity(answers, targets)
    singles = [scorer.similarity([a], [t])[0] for a, t in zip(answers, targets, strict=True)]
    assert batched == pytest.approx(singles, abs=1e-5)
    assert scorer.score(page_like(4), page_like(4)) == pytest.approx(1.0, abs=1e-6)
    # The embeddings are L2-normalised: cosine of an image with itself is 1, with others less.
    emb = scorer.embed([page_like(1), page_like(2)])
    assert emb.shape[0] == 2
    assert (emb * emb).sum(axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    assert max(batched) < 0.9999


def test_concurrent_clip_scores_share_batches_and_agree(tiny_clip):
    scorer = ClipScorer(str(tiny_clip), batch_size=8)
    pairs = [(page_like(s), page_like(s + 2)) for s in range(8)]
    expected = scorer.similarity([a for a, _ in pairs], [b for _, b in pairs])
    calls = []
    original = scorer.similarity

    def counting(answers, targets):
        calls.append(len(answers))
        return original(answers, targets)

    scorer.similarity = counting  # type: ignore[method-assign]
    results: dict[int, float] = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, scorer.score(*pairs[i])))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [results[i] for i in range(8)] == pytest.approx(expected, abs=1e-5)
    assert sum(calls) == 8 and len(calls) < 8  # at least two pairs went in one batch


def test_clip_weights_hash_names_the_weights(tiny_clip, tiny_clip_factory):
    first = ClipScorer(str(tiny_clip))
    again = ClipScorer(str(tiny_clip))
    other = ClipScorer(str(tiny_clip_factory(1)))
    assert first.weights_hash().startswith("sha256:")
    assert first.weights_hash() == again.weights_hash()
    assert first.weights_hash() != other.weights_hash()
    facts = first.describe()
    assert facts["scorer"] == f"clip:{tiny_clip}"
    assert facts["scorer_weights_hash"] == first.weights_hash()


def test_missing_clip_weights_stop_with_a_message_never_a_fallback(tmp_path, monkeypatch):
    with pytest.raises(ConfigError) as missing_folder:
        make_scorer(f"clip:{tmp_path / 'no-such-model'}")
    text = str(missing_folder.value)
    assert "could not be loaded" in text and "--scorer perceptual" in text
    assert "HF_HUB_OFFLINE=1" in text and "clip:/path/to/folder" in text

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    with pytest.raises(ConfigError, match="openai/clip-vit-base-patch32.*could not be loaded"):
        ClipScorer("openai/clip-vit-base-patch32")

"""Frontend benchmarks, each ratio measured in one run.

``python benchmarks/bench_frontend.py`` measures:

* renders per second from the warm pool (one browser, reused) against launching a browser per
  render as the reference harness does (same pages, same renderer code, one browser at a time);
* CLIP scoring batched against one pair at a time, on a CLIP of ViT-B/32's shape with random
  weights (the real scorer's compute; no weights can be downloaded here) unless ``--clip``
  names real weights.

``python benchmarks/bench_frontend.py --scores 500`` also runs the scripted agents over the
first N test tasks: ``scripted:oracle`` and ``scripted:no-ask`` with both scorers (CLIP: a tiny
random CLIP, as in the tests, unless ``--clip``), and checks that a missing answer scores what
a black image scores. Renders are kept in ``--image-dir`` so a second run is fast.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def bench_renders(pages: list[str], rounds: int) -> dict[str, float]:
    """Warm pool against a browser per render, interleaved in ``rounds`` so that both see the
    same load on a shared machine."""
    from colbench.gyms.frontend.render.renderer import Renderer, _Browser

    renderer = Renderer(pool_size=1)
    warm = cold = 0.0
    try:
        renderer.warm()
        renderer.render(pages[0])  # first load fills the browser's caches, as in any real run
        chunks = [pages[i::rounds] for i in range(rounds)]
        for chunk in chunks:
            started = time.perf_counter()
            for page in chunk:
                result = renderer.render(page)
                assert result.ok, result.verdict()
            warm += time.perf_counter() - started
            started = time.perf_counter()
            for page in chunk:
                browser = _Browser(renderer.chromium, renderer.chromedriver, renderer.window,
                                   renderer.timeout)
                try:
                    result = browser.render(page, renderer.max_height, renderer.max_nodes)
                    assert result.ok, result.verdict()
                finally:
                    browser.kill()
            cold += time.perf_counter() - started
    finally:
        renderer.close()
    return {"warm_per_s": len(pages) / warm, "cold_per_s": len(pages) / cold,
            "ratio": cold / warm}


def bench_clip(model_dir: Path, n: int, batch_size: int, rounds: int) -> dict[str, float]:
    """One pair per call against ``n`` pairs per call, interleaved in ``rounds``."""
    from PIL import Image

    from colbench.gyms.frontend.scoring import ClipScorer

    scorer = ClipScorer(str(model_dir), batch_size=batch_size)
    images = [Image.new("RGB", (1366, 2400), ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256))
              for i in range(n + 1)]
    answers, targets = images[:n], images[1:]
    scorer.similarity(answers[:2], targets[:2])  # warm-up
    single = together = 0.0
    worst = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        one_by_one = [scorer.similarity([a], [t])[0]
                      for a, t in zip(answers, targets, strict=True)]
        single += time.perf_counter() - started
        started = time.perf_counter()
        batched = scorer.similarity(answers, targets)
        together += time.perf_counter() - started
        worst = max(worst, *(abs(a - b) for a, b in zip(one_by_one, batched, strict=True)))
    total = n * rounds
    return {"single_pairs_per_s": total / single, "batched_pairs_per_s": total / together,
            "ratio": single / together, "max_abs_difference": worst}


def run_scores(n: int, clip_dir: Path, image_dir: Path, concurrency: int) -> None:
    from PIL import Image

    from colbench.gyms.frontend.env import FrontendEnv
    from colbench.gyms.frontend.scoring import black_image, make_scorer
    from colbench.runner import EvalConfig, evaluate

    out_root = Path(tempfile.mkdtemp(prefix="bench-frontend-runs-"))
    for scorer in ("perceptual", f"clip:{clip_dir}"):
        for model in ("scripted:oracle", "scripted:no-ask"):
            started = time.perf_counter()
            summary = evaluate(EvalConfig(
                env="colbench/Frontend-v0", model=model,
                out=out_root / f"{model.split(':')[1]}-{scorer.split(':')[0]}",
                num_tasks=n, concurrency=concurrency, progress=False,
                env_kwargs={"scorer": scorer, "image_dir": str(image_dir)}))
            score = summary.metrics["score"]
            print(f"  {scorer.split(':')[0]:<10} {model:<16} score {score.mean:.4f} "
                  f"[{score.ci95[0]:.4f}, {score.ci95[1]:.4f}]  min over tasks "
                  f"{_min_score(out_root, model, scorer):.4f}  ok {summary.counts.ok}/{n}  "
                  f"({time.perf_counter() - started:.0f}s)")
        env = FrontendEnv(scorer=scorer, image_dir=image_dir)
        checker = make_scorer(scorer)
        equal = 0
        missing_scores = []
        for task in env.tasks.subset(n):
            env.reset(options={"task_id": task.id})
            _, reward, _, _, info = env.step("I WANT TO ANSWER: I have no page.")
            target = Image.open(info["metrics"]["target_image"])
            equal += reward == checker.score(black_image(), target)
            missing_scores.append(reward)
        print(f"  {scorer.split(':')[0]:<10} missing answer   score "
              f"{statistics.mean(missing_scores):.4f}; equal to the black image's score on "
              f"{equal}/{n} tasks")


def _min_score(root: Path, model: str, scorer: str) -> float:
    import json

    path = root / f"{model.split(':')[1]}-{scorer.split(':')[0]}" / "episodes.jsonl"
    scores = [json.loads(line)["metrics"]["score"] for line in path.read_text().splitlines()
              if line.strip()]
    return min(scores)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20, help="pages per render timing")
    parser.add_argument("--clip-pairs", type=int, default=32, help="pairs per CLIP timing")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4,
                        help="interleaved rounds of each comparison (a shared machine's load "
                             "changes; interleaving gives both sides the same)")
    parser.add_argument("--clip", type=Path, help="real CLIP weights (a folder)")
    parser.add_argument("--scores", type=int, metavar="N",
                        help="also score oracle / no-ask / missing on the first N test tasks")
    parser.add_argument("--image-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / "colbench-bench-renders")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)

    from colbench.gyms.frontend.generator import compose_page
    from colbench.gyms.frontend.scoring import build_random_clip

    pages = [compose_page(900_000 + i).to_html() for i in range(args.pages)]
    r = bench_renders(pages, args.rounds)
    print(f"renders: warm pool {r['warm_per_s']:.2f}/s, browser per render "
          f"{r['cold_per_s']:.2f}/s -> {r['ratio']:.1f}x  ({args.pages} generated pages)")

    with tempfile.TemporaryDirectory() as tmp:
        base = args.clip or build_random_clip(Path(tmp) / "base", size="base")
        c = bench_clip(base, args.clip_pairs, args.batch_size, args.rounds)
        kind = "real weights" if args.clip else "ViT-B/32 shape, random weights"
        print(f"clip ({kind}): one pair at a time {c['single_pairs_per_s']:.2f} pairs/s, "
              f"batched {c['batched_pairs_per_s']:.2f} pairs/s -> {c['ratio']:.1f}x  "
              f"(max |difference| {c['max_abs_difference']:.1e})")
        if args.scores:
            tiny = args.clip or build_random_clip(Path(tmp) / "tiny", size="tiny")
            print(f"scores over the first {args.scores} test tasks "
                  f"(clip = {'real weights' if args.clip else 'tiny random CLIP'}):")
            run_scores(args.scores, tiny, args.image_dir, args.concurrency)
    return 0


if __name__ == "__main__":
    sys.exit(main())

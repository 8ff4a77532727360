"""How big an HTML report of a frontend run gets, and how long it takes to build.

Builds a synthetic frontend run directory through :mod:`colbench.rundir` (the format's one
owner): N episodes of a few turns each, shaped like real ColBench frontend episodes (one
system prompt for the run, a question, HTML pages of a few KB as answers, the designer's
replies), each with real PNG renders (a target per task, a render per HTML answer, the last
one also as the final render). Then ``colbench report --html`` is built over it, twice (the
second build updates the first in place), and the script prints, from that one run:

* the page's size in total and per episode, and its assets folder (images hard-linked
  where the filesystem allows, so they take no new space; long texts as files);
* the build time (reading the run, writing page and assets) and the rebuild time;
* what the old page, which embedded every render as a ``data:`` URI and every text whole,
  would have held: the same page built without a folder (texts whole, images named) plus
  the base64 of every image reference and the system prompt in every episode, i.e. the per-episode embedding cost measured on
  these renders; with ``--image-kb`` set to a real render's size (about 60 KB) it shows
  the issue's case.

Usage: ``python benchmarks/bench_report.py [--episodes 1000] [--turns 3] [--image-kb 16]``.
"""

from __future__ import annotations

import argparse
import base64
import html
import os
import random
import struct
import tempfile
import time
import zlib
from pathlib import Path

from colbench.records import EpisodeRecord, TaskSetRef, TurnRecord
from colbench.report import load_run, render_html, write_html
from colbench.rundir import RunDir, summarise_records

ENV_ID = "colbench/Frontend-v0"
MODEL = "synthetic:frontend-bench"
THEMES = ("bakery", "portfolio", "startup", "restaurant", "conference")
SYSTEM_PROMPT = ("You are helping a person build a web page they have in mind. Ask about "
                 "what you cannot see, then answer with one HTML document styled with "
                 "Tailwind CSS classes. " * 6)


def png(width: int, height: int, rng: random.Random) -> bytes:
    """A real PNG of ``width`` x ``height`` RGB noise (which barely compresses, so its size
    is about 3 bytes per pixel, like a detailed screenshot)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + rng.randbytes(3 * width) for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


def page_html(task: int, turn: int, rng: random.Random) -> str:
    """An agent's HTML answer of about 3 KB, as frontend agents write them."""
    sections = "".join(
        f'<section class="px-8 py-12 bg-{rng.choice(["white", "gray-50", "blue-50"])}">'
        f'<h2 class="text-3xl font-bold text-gray-900">Section {i} of page {task}</h2>'
        f'<p class="mt-4 text-lg text-gray-600">{"Lorem ipsum dolor sit amet. " * 4}</p>'
        '<a class="mt-6 inline-block rounded bg-blue-600 px-4 py-2 text-white" href="#">'
        "Learn more</a></section>" for i in range(6))
    return (f"Here is version {turn} of the page.\n<html><head><title>Page {task}</title>"
            f'</head><body class="font-sans">{sections}</body></html>')


def write_run(out: Path, records: list[EpisodeRecord], task_set: TaskSetRef) -> Path:
    """A finished run of ``records`` in ``out``, written through
    :class:`colbench.rundir.RunDir` (``run.json``, ``episodes.jsonl``, ``summary.json``);
    env and model are the first record's."""
    env, model = records[0].env, records[0].model
    identity = {"env": env, "model": model, "split": "test", "trials": 1,
                "task_set": {"name": task_set.name, "hash": task_set.hash}}
    run_dir = RunDir(out)
    run_dir.prepare(identity)
    try:
        with run_dir.episode_writer() as writer:
            for record in records:
                writer.write(record)
        run_dir.write_summary(summarise_records(
            records, env=env, model=model, split="test", task_set=task_set, trials=1,
            env_facts={"scorer": "synthetic"}))
    finally:
        run_dir.release_lock()
    return out


def build_frontend_run(out: Path, episodes: int, *, turns: int = 3, image_kb: int = 16,
                       seed: int = 0) -> Path:
    """A finished frontend run of ``episodes`` episodes in ``out`` (with its renders in
    ``out/renders``). Each task's metadata names a theme (the report's breakdown groups by
    it)."""
    out = out.resolve()  # records name renders by absolute paths, as the frontend env does
    rng = random.Random(seed)
    side = max(2, int((image_kb * 1024 / 3) ** 0.5))
    renders = out / "renders"
    renders.mkdir(parents=True, exist_ok=True)
    records = []
    for index in range(episodes):
        target = renders / f"target-{index:05d}.png"
        target.write_bytes(png(side, side, rng))
        turn_records = []
        render = target
        for turn in range(turns):
            info: dict[str, object] = {}
            if turn == 0:
                action = "What colours and sections should the page have?"
                reply = "Blue buttons on white, six sections with a heading each. " * 3
            else:
                action = page_html(index, turn, rng)
                render = renders / f"answer-{index:05d}-{turn}.png"
                render.write_bytes(png(side, side, rng))
                info["images"] = [str(render)]
                reply = ("The headings should be larger and the second section needs a "
                         "grey background. " * 4)
            turn_records.append(TurnRecord(
                observation="Build the page I describe: a landing page." if turn == 0 else "",
                action=action, reward=0.0, next_observation=reply, info=info))
        score = rng.random()
        records.append(EpisodeRecord(
            task_id=f"frontend-test-{index:05d}", trial=0, env=ENV_ID, model=MODEL,
            seed=index, status="ok", system_prompt=SYSTEM_PROMPT, turns=turn_records,
            final_answer=turn_records[-1].action,
            task_metadata={"theme": THEMES[index % len(THEMES)], "seed": index},
            metrics={"score": score, "success": score >= 0.9, "questions": 1,
                     "target_image": str(target), "final_image": str(render)},
            terminated=True))
    return write_run(out, records, TaskSetRef(name="frontend-bench",
                                              hash=f"sha256:{episodes:064x}", count=episodes))


def embedded_image_bytes(html_page: str, folder: Path) -> int:
    """What the old page spent on images: the ``data:`` URI of every ``<img>`` reference."""
    total = 0
    for chunk in html_page.split('<img src="')[1:]:
        src = chunk.split('"', 1)[0]
        total += len("data:image/png;base64,") + len(base64.b64encode(
            (folder / src).read_bytes()))
    return total


def folder_size(folder: Path) -> tuple[int, int, int]:
    """Bytes of the files, bytes new on disk (hard links to renders cost none), files."""
    total = new = count = 0
    for path in folder.iterdir():
        stat = path.stat()
        total += stat.st_size
        new += stat.st_size if stat.st_nlink == 1 else 0
        count += 1
    return total, new, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--image-kb", type=int, default=16, help="size of each render")
    args = parser.parse_args()
    mib = 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="bench_report_") as tmp:
        started = time.perf_counter()
        run = build_frontend_run(Path(tmp) / "run", args.episodes, turns=args.turns,
                                 image_kb=args.image_kb)
        print(f"synthetic run: {args.episodes} frontend episodes x {args.turns} turns, "
              f"~{args.image_kb} KB renders ({time.perf_counter() - started:.1f} s to make)")
        page = Path(tmp) / "report" / "report.html"
        t0 = time.perf_counter()
        runs = [load_run(run)]
        t1 = time.perf_counter()
        write_html(runs, page)
        t2 = time.perf_counter()
        write_html([load_run(run)], page)  # the same report again: an update in place
        t3 = time.perf_counter()
        html_bytes = page.stat().st_size
        assets = page.with_name("report_assets")
        total, new, files = folder_size(assets)
        old_text = len(render_html(runs).encode("utf-8"))
        old_images = embedded_image_bytes(page.read_text(encoding="utf-8"), page.parent)
        # The old page also showed the system prompt in every episode, not once per run.
        repeated_prompts = (args.episodes - 1) * len(html.escape(SYSTEM_PROMPT))
        old = old_text + old_images + repeated_prompts
        print(f"build: {t2 - t0:.2f} s (read run {t1 - t0:.2f} s, write {t2 - t1:.2f} s); "
              f"rebuild over it: {t3 - t2:.2f} s; {os.cpu_count()} CPUs, load "
              f"{os.getloadavg()[0]:.1f}")
        print(f"new page: {html_bytes / mib:.2f} MiB of HTML "
              f"({html_bytes / args.episodes:,.0f} bytes per episode); assets: {files} files, "
              f"{total / mib:.1f} MiB ({new / mib:.1f} MiB new on disk, the rest hard links)")
        print(f"old page (embedded; estimated, a lower bound): {old / mib:.1f} MiB "
              f"({old / args.episodes:,.0f} bytes per episode, of which images "
              f"{old_images / args.episodes:,.0f}); new/old HTML: {html_bytes / old:.3f}")


if __name__ == "__main__":
    main()

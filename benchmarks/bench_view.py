"""What a poll of ``colbench view`` costs on a large frontend run, changed and unchanged.

Builds the synthetic frontend run of ``bench_report.py`` (N episodes shaped like real ones,
each with PNG renders), then asks the viewer's API, in one process and one run, for:

* the run list the first time (every run read through :mod:`colbench.rundir`);
* the run list again with nothing changed (the page's poll: a few ``stat`` calls);
* the run list after one more episode was appended (the run is read again);
* the run's episode list, one transcript and one render.

It prints each time (median of ``--repeats``), the ratio of a changed poll to an unchanged
one, and the sizes of the answers (a transcript carries its renders as URLs, never bytes).

Usage: ``python benchmarks/bench_view.py [--episodes 1000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_report import build_frontend_run

from colbench.rundir import RunDir
from colbench.view import create_app


def timed(action: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = build_frontend_run(Path(tmp) / "runs" / "frontend", args.episodes, image_kb=4)
        client = create_app([Path(tmp) / "runs"]).test_client()

        def runs() -> dict:
            response = client.get("/api/runs")
            assert response.status_code == 200
            return response.get_json()

        cold, body = timed(runs, 1)
        [row] = body["runs"]
        unchanged, _ = timed(runs, args.repeats)
        record = RunDir(run).latest_episodes()[-1]
        appended = 0

        def append_and_poll() -> dict:
            nonlocal appended
            appended += 1
            with RunDir(run).episode_writer() as writer:
                writer.write(record.model_copy(update={"task_id": f"extra-{appended:04d}"}))
            return runs()

        changed, body = timed(append_and_poll, args.repeats)
        assert body["runs"][0]["episodes"] == args.episodes + appended
        listing_time, listing = timed(lambda: client.get(f"/api/runs/{row['id']}"),
                                      args.repeats)
        query = f"task={record.task_id}&trial={record.trial}"
        episode_time, episode = timed(
            lambda: client.get(f"/api/runs/{row['id']}/episode?{query}"), args.repeats)
        renders = episode.get_json()["renders"]
        image_time, image = timed(lambda: client.get(renders[0]["url"]), args.repeats)

    print(f"colbench view on a frontend run of {args.episodes} episodes "
          f"(episodes.jsonl {row['episodes']} records; medians of {args.repeats})")
    print(f"  run list, first read:            {1000 * cold:9.1f} ms")
    print(f"  poll, nothing changed:           {1000 * unchanged:9.1f} ms")
    print(f"  poll after one appended episode: {1000 * changed:9.1f} ms  "
          f"({changed / unchanged:.0f}x the unchanged poll)")
    print(f"  episode list:                    {1000 * listing_time:9.1f} ms, "
          f"{len(listing.data) / 1024:.0f} KiB ({len(listing.data) / args.episodes:.0f} B "
          "per episode)")
    print(f"  one transcript:                  {1000 * episode_time:9.1f} ms, "
          f"{len(episode.data) / 1024:.1f} KiB, {len(renders)} renders as URLs, "
          f"base64 in it: {b'base64' in episode.data}")
    print(f"  one render:                      {1000 * image_time:9.1f} ms, "
          f"{len(image.data) / 1024:.1f} KiB")


if __name__ == "__main__":
    main()

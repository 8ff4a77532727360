"""DeepSearch: search latency on the test corpus, env steps per second, and what the corpus
costs to make, measured in one run.

1. Making the test world: generating the world, its articles and its questions, then
   building the BM25 index against loading it from the disk cache (the ratio says what the
   cache saves each process).
2. Search latency per query over the test corpus (one query at a time, as the env sends
   them): p50 and p95 over ``--queries`` queries, half the test questions as an agent would
   first type them, half article titles as the oracle types them; in wall-clock time and in
   the thread's CPU time, which a machine busy with other work does not inflate.
3. Env steps per second: the oracle's episodes on the first ``--episodes`` test tasks,
   counting ``env.step`` calls (searches, opens and answers) over the time spent in
   ``reset`` and ``step``.

Usage: ``python benchmarks/bench_search.py [--queries 1000] [--episodes 200]``. Needs the
``[search]`` extra. The cache goes to a temporary folder, so the user's is left alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--episodes", type=int, default=200)
    args = parser.parse_args(argv)
    if args.queries < 2 or args.episodes < 1:
        parser.error("--queries must be at least 2 and --episodes at least 1")
    os.environ["COLBENCH_CACHE"] = tempfile.mkdtemp(prefix="bench-search-")

    from colbench.gyms.search import DeepSearchEnv
    from colbench.gyms.search.corpus import build_corpus
    from colbench.gyms.search.index import SearchIndex, cached_index
    from colbench.gyms.search.questions import generate_questions
    from colbench.gyms.search.tasks import SPLIT_SEEDS, load_search_tasks
    from colbench.gyms.search.world import generate_world

    seed = SPLIT_SEEDS["test"]
    start = time.perf_counter()
    world = generate_world(seed)
    documents = build_corpus(world)
    corpus_seconds = time.perf_counter() - start
    start = time.perf_counter()
    generate_questions(world, len(load_search_tasks("test")))
    questions_seconds = time.perf_counter() - start
    tasks = load_search_tasks("test")
    start = time.perf_counter()
    index = SearchIndex(documents)
    build_seconds = time.perf_counter() - start
    folder = Path(os.environ["COLBENCH_CACHE"]) / "bench-index"
    cached_index(documents, folder)
    loads = []
    for _ in range(5):
        start = time.perf_counter()
        cached_index(documents, folder)
        loads.append(time.perf_counter() - start)
    load_seconds = statistics.median(loads)
    print(f"test world: {len(world.entities)} entities, {len(documents)} articles, "
          f"{len(tasks)} questions")
    print(f"  world and articles {corpus_seconds * 1000:8.1f} ms")
    print(f"  questions          {questions_seconds * 1000:8.1f} ms")
    print(f"  BM25 index: build {build_seconds * 1000:.1f} ms, load from cache "
          f"{load_seconds * 1000:.1f} ms ({build_seconds / load_seconds:.1f}x faster)")

    titles = [d.title for d in documents]
    queries = [(tasks[i % len(tasks)].prompt if i % 2 == 0 else titles[i % len(titles)])
               for i in range(args.queries)]
    latencies, cpu = [], []
    for query in queries:
        start, start_cpu = time.perf_counter(), time.thread_time()
        index.search(query, 5)
        cpu.append(time.thread_time() - start_cpu)
        latencies.append(time.perf_counter() - start)
    print(f"search latency over {len(queries)} queries (top 5): "
          f"p50 {percentile(latencies, 0.5) * 1000:.2f} ms, "
          f"p95 {percentile(latencies, 0.95) * 1000:.2f} ms wall; "
          f"p50 {percentile(cpu, 0.5) * 1000:.2f} ms, p95 {percentile(cpu, 0.95) * 1000:.2f} ms "
          "of CPU (wall minus waiting for a core on a busy machine)")

    env = DeepSearchEnv(split="test")
    steps = 0
    env_seconds = env_cpu = 0.0
    for task in list(env.tasks)[:args.episodes]:
        oracle = env.scripted_agent("oracle")
        start, start_cpu = time.perf_counter(), time.thread_time()
        observation, _ = env.reset(options={"task_id": task.id})
        env_seconds += time.perf_counter() - start
        env_cpu += time.thread_time() - start_cpu
        messages = [{"role": "user", "content": observation}]
        done = False
        while not done:
            action = oracle.act(messages)
            start, start_cpu = time.perf_counter(), time.thread_time()
            observation, _, terminated, truncated, _ = env.step(action)
            env_seconds += time.perf_counter() - start
            env_cpu += time.thread_time() - start_cpu
            steps += 1
            done = terminated or truncated
            messages += [{"role": "assistant", "content": action},
                         {"role": "user", "content": observation}]
    env.close()
    print(f"env: {steps} steps in {args.episodes} oracle episodes, "
          f"{steps / env_seconds:,.0f} steps/s wall ({env_seconds / steps * 1000:.2f} ms a "
          f"step), {steps / env_cpu:,.0f} steps/s of CPU")


if __name__ == "__main__":
    main()

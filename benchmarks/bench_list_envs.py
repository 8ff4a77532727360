"""How long ``colbench list envs`` takes (issue 26 asks for under 1 s after install):
gathering every env's facts afresh (``--refresh``, what every call cost before the listing
kept a cache) against reading the cache, beside the floors any ``colbench`` command pays:
starting Python and importing colbench's CLI, and starting Python alone (its ``site``, which
loads the installed ``.pth`` files, is most of it).

Each measure is the median over ``--repeats`` runs of a fresh ``python -m colbench.cli.main``
process: wall-clock seconds and the CPU seconds the process used (on a shared machine the
CPU figure says more than the clock). ``--skip-fresh`` leaves out the slow afresh runs.
The runs may write bytecode (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment)
and a first unmeasured run of each command writes it, so that each is measured as an install
runs it, not compiling colbench's changed modules every time.

    python benchmarks/bench_list_envs.py [--repeats 3] [--counts] [--skip-fresh]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

#: The environment of every measured run: bytecode may be written (see the docstring).
RUN_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run_once(command: Sequence[str]) -> None:
    """Run ``command`` (which must succeed), its output discarded."""
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=RUN_ENV)


def timed(command: Sequence[str]) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one run of ``command`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run_once(command)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def median_of(command: Sequence[str], repeats: int) -> tuple[float, float]:
    run_once(command)  # writes its bytecode and, for the listing, its cache
    runs = [timed(command) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--counts", action="store_true",
                        help="count each split's tasks too (slower when gathered afresh)")
    parser.add_argument("--skip-fresh", action="store_true",
                        help="leave out the runs that gather every fact afresh (seconds each)")
    args = parser.parse_args(argv)
    listing = [sys.executable, "-m", "colbench.cli.main", "list", "envs"]
    if not args.counts:
        listing.append("--no-counts")
    fresh = None if args.skip_fresh else median_of([*listing, "--refresh"], args.repeats)
    cached = median_of(listing, args.repeats)
    floor = median_of([sys.executable, "-c", "import colbench.cli.main"], args.repeats)
    python_alone = median_of([sys.executable, "-c", "pass"], args.repeats)
    print(f"colbench list envs{'' if args.counts else ' --no-counts'}, median of "
          f"{args.repeats} runs")
    print(f"{'':32}{'wall s':>10}{'CPU s':>10}")
    rows = [("gathered afresh (--refresh)", fresh), ("from the cache", cached),
            ("floor: import colbench.cli", floor), ("floor: python alone", python_alone)]
    for name, measured in rows:
        if measured is not None:
            print(f"{name:32}{measured[0]:>10.2f}{measured[1]:>10.2f}")
    if fresh is not None:
        print(f"{'afresh / from the cache':32}{fresh[0] / cached[0]:>9.1f}x"
              f"{fresh[1] / cached[1]:>9.1f}x")
    print(f"{'from the cache minus the floor':32}{cached[0] - floor[0]:>10.2f}"
          f"{cached[1] - floor[1]:>10.2f}")
    print(f"{'colbench beyond python alone':32}{cached[0] - python_alone[0]:>10.2f}"
          f"{cached[1] - python_alone[1]:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

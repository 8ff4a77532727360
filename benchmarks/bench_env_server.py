"""Env server throughput: steps per second in-process, through ``colbench serve-envs`` on
loopback (colbench's routes, ``RemoteEnv``), and through its AgentGym routes, at 1 and 64
concurrent episodes, on TextCraft and the backend, side by side in one run.

The server runs as a real ``colbench serve-envs`` process (waitress, ``--threads`` request
threads); the clients are threads of this process, one episode each, each with its own env:
in-process, a local env; remote, a :class:`~colbench.remote.RemoteEnv`; AgentGym, plain
HTTP calls shaped as AgentGym's clients make them. Envs are made and reset before the clock
starts; then every client plays episodes (reset, then actions) until the run has taken
``--steps`` steps in all, and steps per second is steps over wall-clock seconds (resets are
counted as steps too: they cross the wire alike).

* TextCraft plays under ``--protocol agentgym`` in every mode (the AgentGym routes need
  it), ten commands an episode (inventory, gets, crafts that fail and succeed).
* The backend's episode is one question (the built-in simulated human answers) and one
  answer, whose step runs the hidden tests in the code sandbox: the steps run code. It has
  no AgentGym protocol, so that column says n/a.

Printed: a table of steps/s per env, concurrency and mode, and the ratios remote /
in-process and AgentGym / in-process. Target: at 64 concurrent, the server reaches at least
0.5 of in-process throughput on the backend. The load average is printed beside, since a
busy machine lowers every figure.

Usage: ``python benchmarks/bench_env_server.py [--steps 600] [--concurrency 1,64]
[--threads 64]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

import colbench
from colbench.remote import RemoteEnv

TEXTCRAFT = "colbench/TextCraft-v0"
BACKEND = "colbench/Backend-v0"
TEXTCRAFT_ACTIONS = ["inventory", "get 1 oak log", "get 2 cobblestone", "inventory",
                     "craft 4 oak planks using 1 oak log", "get 1 stick", "inventory",
                     "craft 1 stick using 2 oak planks", "get 3 iron ingot", "inventory"]
BACKEND_QUESTION = "What should happen at the boundaries, and what does it return then?"


def start_server(threads: int) -> tuple[subprocess.Popen[str], str]:
    """``colbench serve-envs`` on a free loopback port; returns the process and its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "colbench.cli.main", "serve-envs", "--port", "0",
         "--threads", str(threads), "--max-episodes-per-client", "1024"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"serving at (http://\S+?) ", line)
    if match is None:
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return process, match.group(1)


class Player:
    """One client's episodes in one mode: ``reset(index)`` then ``step(turn)`` calls."""

    def __init__(self, env_id: str, mode: str, url: str, kwargs: dict[str, Any]) -> None:
        self.env_id, self.mode, self.url = env_id, mode, url
        self.http: httpx.Client | None = None
        if mode == "in-process":
            self.env: Any = colbench.make(env_id, **kwargs)
        elif mode == "remote":
            self.env = RemoteEnv(url, env_id, **kwargs)
        else:
            self.http = httpx.Client(base_url=f"{url}/agentgym/{env_id}", timeout=300)
            self.number = self.http.post("/create").json()["id"]
        self.task_ids = self.env.unwrapped.tasks.ids() if self.http is None else []

    def reset(self, index: int) -> str:
        """Start episode ``index``; returns its first observation."""
        if self.http is not None:
            reply = self.http.post("/reset", json={"id": self.number, "data_idx": index % 100})
            assert "error" not in reply.json(), reply.text
            return str(reply.json()["observation"])
        return self.env.reset(options={"task_id": self.task_ids[index % len(self.task_ids)]})[0]

    def message(self, turn: int, first: str) -> str:
        if self.env_id == BACKEND:
            if turn == 0:
                return BACKEND_QUESTION
            signature = first.rsplit("signature of the function is:", 1)[-1].strip()
            return f"I WANT TO ANSWER:\n```python\n{signature}:\n    return None\n```"
        action = TEXTCRAFT_ACTIONS[turn % len(TEXTCRAFT_ACTIONS)]
        return action if self.http is not None else f"Action: {action}"

    def play(self, index: int) -> int:
        """One episode; returns the steps taken (the reset counts as one)."""
        first = self.reset(index)
        limit = 2 if self.env_id == BACKEND else len(TEXTCRAFT_ACTIONS)
        for turn in range(limit):
            if self.http is not None:
                reply = self.http.post("/step", json={"id": self.number,
                                                      "action": self.message(turn, first)})
                assert "error" not in reply.json(), reply.text
                over = bool(reply.json()["done"])
            else:
                _, _, terminated, truncated, _ = self.env.step(self.message(turn, first))
                over = terminated or truncated
            if over:
                return turn + 2
        return limit + 1

    def close(self) -> None:
        if self.http is not None:
            self.http.post("/close", json={"id": self.number})
            self.http.close()
        else:
            self.env.close()


def measure(env_id: str, mode: str, url: str, concurrency: int, steps: int) -> float:
    """Steps per second of ``concurrency`` clients playing ``env_id`` in ``mode``."""
    kwargs = {"protocol": "agentgym"} if env_id == TEXTCRAFT else {}
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        players = list(pool.map(lambda _: Player(env_id, mode, url, kwargs),
                                range(concurrency)))
        for index, player in enumerate(players):  # warm: every env has played once
            pool.submit(player.play, index)
        lock = threading.Lock()
        taken = [0]
        episodes = iter(range(10**9))

        def client(player: Player) -> None:
            while True:
                with lock:
                    if taken[0] >= steps:
                        return
                    index = next(episodes)
                played = player.play(index)
                with lock:
                    taken[0] += played

        pool.shutdown(wait=True)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        started = time.perf_counter()
        list(pool.map(client, players))
        seconds = time.perf_counter() - started
        list(pool.map(Player.close, players))
    return taken[0] / seconds


def _cell(value: float | None, width: int) -> str:
    return f"{value:>{width}.1f}" if value is not None else f"{'n/a':>{width}}"


def _ratio(value: float | None, base: float | None, width: int) -> str:
    return (f"{value / base:>{width}.2f}" if value is not None and base
            else f"{'n/a':>{width}}")


def table(results: dict[tuple[str, int, str], float | None],
          concurrencies: list[int]) -> str:
    """Steps/s per env, concurrency and mode, and the ratios to in-process."""
    lines = [f"{'env':<12} {'conc':>4}  {'in-process':>11} {'remote':>9} {'agentgym':>9}"
             f"  {'remote/in':>9} {'agentgym/in':>11}"]
    for env_id in (TEXTCRAFT, BACKEND):
        for concurrency in concurrencies:
            local = results[(env_id, concurrency, "in-process")]
            remote = results[(env_id, concurrency, "remote")]
            agentgym = results.get((env_id, concurrency, "agentgym"))
            name = env_id.split("/")[1].removesuffix("-v0")
            lines.append(f"{name:<12} {concurrency:>4}  {_cell(local, 11)} {_cell(remote, 9)} "
                         f"{_cell(agentgym, 9)}  {_ratio(remote, local, 9)} "
                         f"{_ratio(agentgym, local, 11)}")
    return "\n".join(lines)


def run(steps: int, concurrencies: list[int], threads: int,
        report: Callable[[str], None] = print) -> dict[tuple[str, int, str], float | None]:
    process, url = start_server(threads)
    results: dict[tuple[str, int, str], float | None] = {}
    try:
        for env_id in (TEXTCRAFT, BACKEND):
            for concurrency in concurrencies:
                # Modes take turns within each setting, so the machine's load falls alike.
                for mode in ("in-process", "remote", "agentgym"):
                    if mode == "agentgym" and env_id == BACKEND:
                        continue
                    results[(env_id, concurrency, mode)] = value = measure(
                        env_id, mode, url, concurrency, steps)
                    report(f"  {env_id} x{concurrency} {mode}: {value:.1f} steps/s")
    finally:
        process.terminate()
        process.wait(timeout=60)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600,
                        help="steps per measurement (all clients together)")
    parser.add_argument("--concurrency", default="1,64",
                        help="comma-separated concurrent episodes (default 1,64)")
    parser.add_argument("--threads", type=int, default=64,
                        help="the server's request threads (default 64)")
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    results = run(args.steps, concurrencies, args.threads)
    print(table(results, concurrencies))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()

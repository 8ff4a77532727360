"""Every count the README states comes from the code (issue 26): task counts per env and
split, the number of suites and env ids, BabyAI's levels, the backend's families, the
Baselines table's tasks, and the extra each env needs. Each number is parsed from README.md
(and the games' table of docs/protocols.md, the limits of docs/sandbox.md) and compared with
the registry, the suite manifests, ``colbench list envs``, benchmarks/bench_baselines.py and
``SandboxLimits``.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

import colbench
from colbench import suites
from colbench.cli.env_info import EnvInfo, extras_declared
from colbench.cli.env_listing import env_infos
from colbench.envs import env_family

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PROTOCOLS = ROOT / "docs" / "protocols.md"

#: An env id in a table cell, with or without its ``colbench/`` namespace.
ENV_ID = re.compile(r"`((?:colbench/)?[A-Z][A-Za-z]*(?:-[A-Za-z<>]+)*-v\d+)`")
SPLIT_COUNT = re.compile(r"\b(train|dev|test) ([\d,]+)")


def number(text: str) -> int:
    return int(text.replace(",", ""))


def readme() -> str:
    return README.read_text(encoding="utf-8")


def table(text: str, header_start: str) -> list[list[str]]:
    """The body rows (cells stripped) of the Markdown table whose header line starts with
    ``header_start``."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header_start)]
    assert len(starts) == 1, f"expected one table headed {header_start!r}, found {len(starts)}"
    rows = []
    for line in lines[starts[0] + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    assert rows, f"the table headed {header_start!r} is empty"
    return rows


def ids_in(cell: str) -> list[str]:
    return [name if name.startswith("colbench/") else f"colbench/{name}"
            for name in ENV_ID.findall(cell)]


def our_env_ids() -> list[str]:
    return sorted(name for name in colbench.env_ids() if name.startswith("colbench/"))


@cache
def listed() -> dict[str, EnvInfo]:
    """What ``colbench list envs`` shows for every colbench env id (its cache included)."""
    names = our_env_ids()
    return dict(zip(names, env_infos(names), strict=True))


@cache
def split_size(env_id: str, split: str) -> int:
    """The number of tasks of ``split``: as ``colbench list envs`` counts it, else (a split
    it does not list) from the env made on that split."""
    count = listed()[env_id].splits.get(split)
    if isinstance(count, int):
        return count
    env = colbench.make(env_id, split=split)
    try:
        return len(env.unwrapped.tasks)
    finally:
        env.close()


def babyai_levels() -> int:
    """Ids of the BabyAI family less ``BabyAI-v0``, which plays every level."""
    return sum(1 for name in our_env_ids()
               if env_family(name) == "babyai" and name != "colbench/BabyAI-v0")


def suite_of(env_id: str) -> suites.SuiteManifest:
    for manifest in suites.manifests().values():
        if env_id in manifest.envs or (manifest.families and env_family(env_id) in
                                       manifest.families):
            return manifest
    raise AssertionError(f"no suite declares {env_id}")


def extra_cell(env_id: str) -> str:
    extra = suite_of(env_id).extra
    return "none" if extra is None else f"`{extra}`"


def check_split_cell(env_id: str, cell: str, where: str) -> None:
    stated = {split: number(count) for split, count in SPLIT_COUNT.findall(cell)}
    assert stated, f"{where}: no split counts for {env_id} in {cell!r}"
    listed_splits = {split for split, count in listed()[env_id].splits.items()
                     if count is not None}
    assert listed_splits <= set(stated), \
        f"{where}: {env_id} has splits {sorted(listed_splits)}, the README gives {stated}"
    actual = {split: split_size(env_id, split) for split in stated}
    assert stated == actual, f"{where}: {env_id}'s tasks are {actual}, the README says {stated}"


def test_the_environments_table_counts_every_split():
    rows = table(readme(), "| id | what | tasks | extra |")
    covered: set[str] = set()
    for cells in rows:
        ids = ids_in(cells[0])
        check_split_cell(ids[0], cells[2], "Environments table")
        for shown in ids:
            pattern = re.escape(shown).replace("<Level>", "[A-Za-z0-9]+")
            matched = {name for name in our_env_ids() if re.fullmatch(pattern, name)}
            assert matched, f"the Environments table names {shown}, which is not registered"
            for env_id in matched:
                assert cells[3] == extra_cell(env_id), \
                    f"{env_id} needs {extra_cell(env_id)}, the table says {cells[3]}"
            covered |= matched
    assert covered == set(our_env_ids()), \
        f"ids missing from the Environments table: {sorted(set(our_env_ids()) - covered)}"


def test_the_number_of_suites_env_ids_and_babyai_levels():
    text = readme()
    match = re.search(r"The (\d+) suites register ([\d,]+) env ids", text)
    assert match, "the README does not say how many suites and env ids there are"
    ours = [m for m in suites.manifests().values()
            if any(name.startswith("colbench/") for name in m.envs) or m.families]
    stated = (int(match.group(1)), number(match.group(2)))
    assert stated == (len(ours), len(our_env_ids())), \
        f"the README says {stated[0]} suites and {stated[1]} env ids; the registry has " \
        f"{len(ours)} and {len(our_env_ids())}"
    levels = re.findall(r"(?:the|its) (\d+) (?:BabyAI )?levels", text)
    assert len(levels) >= 2, "the README names BabyAI's level count in the install table " \
        "and the Environments table"
    assert {int(n) for n in levels} == {babyai_levels()}, \
        f"BabyAI has {babyai_levels()} levels, the README says {levels}"


def test_counts_in_the_prose():
    from colbench.gyms.backend.families import FAMILIES

    backend = "colbench/Backend-v0"
    stated = {
        r"on the ([\d,]+) test tasks\s+of ColBench Backend Programming":
            [split_size(backend, "test")],
        r"the classic template set \((\d+) families\)": [len(FAMILIES)],
        r"Tasks \(v0\): ([\d,]+) train and ([\d,]+) test tasks from (\d+) task families":
            [split_size(backend, "train"), split_size(backend, "test"), len(FAMILIES)],
        r"--split test`\s+over all ([\d,]+) tasks": [split_size(backend, "test")],
        r"Splits: train ([\d,]+), dev ([\d,]+) and test ([\d,]+) questions":
            [split_size("colbench/DeepSearch-v0", split) for split in ("train", "dev", "test")],
    }
    text = readme()
    for pattern, expected in stated.items():
        matches = re.findall(pattern, text)
        assert matches, f"the README no longer says {pattern!r}: update this test"
        for match in matches:
            values = [number(v) for v in ((match,) if isinstance(match, str) else match)]
            assert values == expected, f"{pattern}: the README says {values}, the code {expected}"


def test_the_baselines_table_agrees_with_list_envs_and_the_benchmark():
    bench = {env.env_id: env for env in load_benchmark("bench_baselines").ENVS.values()}
    rows = table(readme(), "| env | blind baseline: what it does |")
    seen = set()
    current = None
    for cells in rows:
        if cells[0]:
            (current,) = ids_in(cells[0])
            seen.add(current)
            played = re.fullmatch(r"([\d,]+) of ([\d,]+)", cells[4])
            assert played, f"{current}: the last column should read 'N of M', got {cells[4]!r}"
            n, size = number(played.group(1)), number(played.group(2))
            assert size == listed()[current].splits["test"], \
                f"{current}: list envs counts {listed()[current].splits['test']} test tasks, " \
                f"the Baselines table {size}"
            assert n == bench[current].n <= size, \
                f"{current}: bench_baselines plays {bench[current].n} tasks, the table says {n}"
        agent = re.match(r"`([a-z-]+)`", cells[1])
        assert agent and current is not None
        assert agent.group(1) in bench[current].baselines
        assert f"scripted:{agent.group(1)}" in listed()[current].scripted_agents or \
            agent.group(1) in listed()[current].scripted_agents
    assert seen == set(bench), f"envs of bench_baselines missing from the table: " \
        f"{sorted(set(bench) - seen)}"


def test_the_install_table_names_each_envs_extra():
    screen = readme().split("\n## ", 1)[0]
    rows = table(screen, "| to play | extra:")
    covered = set()
    declared = extras_declared()  # the installed distribution's extras (pyproject.toml's)
    for cells in rows:
        ids = ids_in(cells[0])
        if not ids:  # the tools' row: every extra it names exists
            named = re.findall(r"`([a-z-]+)`", cells[1])
            assert named and set(named) <= set(declared), \
                f"extras colbench does not declare: {sorted(set(named) - set(declared))}"
            continue
        for env_id in ids:
            assert cells[1] == extra_cell(env_id), \
                f"{env_id} needs {extra_cell(env_id)}, the install table says {cells[1]}"
            covered.add(env_id)
    alone = {name for name in our_env_ids() if env_family(name) is None}
    assert alone <= covered, f"ids missing from the install table: {sorted(alone - covered)}"
    assert "colbench/BabyAI-v0" in covered


def test_the_games_table_of_protocols_md_counts_every_split():
    text = PROTOCOLS.read_text(encoding="utf-8")
    names = {"TextCraft": "colbench/TextCraft-v0", "BabyAI": "colbench/BabyAI-v0",
             "SciWorld": "colbench/SciWorld-v0"}
    rows = table(text, "| env | splits (tasks) | default turn budget | oracle |")
    assert {cells[0] for cells in rows} == set(names)
    for cells in rows:
        check_split_cell(names[cells[0]], cells[1], "docs/protocols.md")


def test_the_sandbox_limits_table_holds_the_defaults():
    from dataclasses import fields

    from colbench.sandbox import SandboxLimits

    def shown(name: str, value: float) -> str:
        if name.endswith("_seconds"):
            return f"{value:g} s"
        if name.endswith("_bytes"):
            for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
                if value >= size and value % size == 0:
                    return f"{value // size} {unit}"
            return f"{value:,} bytes"
        return f"{value:,}"

    defaults = SandboxLimits()
    expected = [shown(spec.name, getattr(defaults, spec.name)) for spec in fields(defaults)]
    rows = table((ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8"),
                 "| limit | default |")
    assert [cells[1] for cells in rows] == expected, \
        "docs/sandbox.md's limits table (in SandboxLimits' field order) is not the defaults"

"""The README's "Try the trainers offline" walk-through runs as written.

Its commands are read from README.md, between ``<!-- walkthrough -->`` and
``<!-- /walkthrough -->``, and each runs as a subprocess of the installed ``colbench`` in an
empty temporary directory (never the repository), with a scrubbed environment: no hub access
(``HF_HUB_OFFLINE=1``), and ``HOME``, ``HF_HOME`` and the caches inside the temporary
directory, so that nothing is read from or written to a cache a developer's earlier runs
filled. Each must exit 0 and leave what the next one needs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
WALKTHROUGH = re.compile(r"<!-- walkthrough -->\s*```bash\n(.*?)```\s*<!-- /walkthrough -->",
                         re.DOTALL)

#: The walk-through's steps in order: what a user must be able to do without the hub.
STEPS = [("models", "tiny"), ("collect",), ("train",), ("evaluate",)]

#: Per command, at most this long: a hung step fails alone, with its output.
STEP_TIMEOUT_S = 300


def walkthrough_commands(text: str) -> list[list[str]]:
    """The walk-through's commands as argument lists (``\\`` continues a line; blank lines
    and ``#`` comments are skipped)."""
    blocks = WALKTHROUGH.findall(text)
    if len(blocks) != 1:
        raise AssertionError(f"README.md must hold exactly one walkthrough block between "
                             f"<!-- walkthrough --> and <!-- /walkthrough -->, found "
                             f"{len(blocks)}")
    joined = re.sub(r"\\\n", " ", blocks[0])
    return [shlex.split(line, comments=True) for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def option(argv: list[str], name: str) -> str:
    """The value of ``name`` (``--out DIR`` or ``--out=DIR``) in ``argv``."""
    for index, word in enumerate(argv):
        if word == name:
            return argv[index + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    raise AssertionError(f"the walk-through's {' '.join(argv[:2])} has no {name}")


def installed_colbench() -> list[str]:
    """The installed ``colbench`` script beside this Python, else ``python -m colbench``."""
    script = Path(sys.executable).with_name("colbench")
    if script.is_file():
        return [str(script)]
    found = shutil.which("colbench")
    return [found] if found else [sys.executable, "-m", "colbench"]


def scrubbed_environment(root: Path) -> dict[str, str]:
    """Only what a shell needs, plus settings that keep the hub and every cache out."""
    home = root / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", "HOME": str(home),
           "HF_HOME": str(root / "hf"), "XDG_CACHE_HOME": str(root / "cache"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false",
           "TMPDIR": str(root / "tmp"),
           # Tiny models gain nothing from threads, and the machine is shared.
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    (root / "tmp").mkdir()
    return env


def check_step(argv: list[str], work: Path) -> None:
    """Assert that the step left what the next one reads."""
    verb = argv[1]
    if verb == "models":
        model = work / argv[3]
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            assert (model / name).is_file(), f"colbench models tiny wrote no {name}"
        assert "chat_template" in (model / "tokenizer_config.json").read_text() or \
            (model / "chat_template.jinja").is_file(), "the tiny model has no chat template"
    elif verb == "collect":
        episodes = [json.loads(line) for line in
                    (work / option(argv, "--out") / "episodes.jsonl").read_text().splitlines()]
        expected = int(option(argv, "--limit")) * int(option(argv, "--k"))
        assert len(episodes) == expected
        assert all(record["status"] == "ok" for record in episodes)
        assert any(record["metrics"].get("success") for record in episodes), \
            "rft keeps successful episodes, and the collection has none"
    elif verb == "train":
        out = work / option(argv, "--out")
        assert (out / "config.json").is_file() or (out / "adapter_config.json").is_file(), \
            f"colbench train wrote no checkpoint to {out}"
    elif verb == "evaluate":
        run = work / option(argv, "--out")
        summary = json.loads((run / "summary.json").read_text())
        lines = (run / "episodes.jsonl").read_text().splitlines()
        assert len(lines) == int(option(argv, "--limit"))
        assert "hf:" in json.dumps(summary)


@pytest.mark.slow
def test_the_readme_walkthrough_runs_in_an_empty_directory(tmp_path):
    for module in ("torch", "transformers", "trl", "peft", "datasets"):
        pytest.importorskip(module, reason="the walk-through trains: colbench[train]")
    commands = walkthrough_commands(README.read_text(encoding="utf-8"))
    steps = [tuple(argv[1:1 + len(step)]) for argv, step in zip(commands, STEPS, strict=False)]
    assert len(commands) == len(STEPS) and steps == STEPS, \
        "the walk-through must make a tiny model, collect, train and evaluate, in that order"
    assert all(argv[0] == "colbench" for argv in commands)

    work = tmp_path / "work"
    work.mkdir()
    env = scrubbed_environment(tmp_path)
    for argv in commands:
        result = subprocess.run(installed_colbench() + argv[1:], cwd=work, env=env,
                                capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
        assert result.returncode == 0, (
            f"{shlex.join(argv)} exited {result.returncode}\n--- stdout\n"
            f"{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}")
        check_step(argv, work)
    hub_cache = tmp_path / "hf" / "hub"
    assert not hub_cache.exists() or not any(hub_cache.iterdir()), \
        f"the walk-through fetched from the hub: {sorted(p.name for p in hub_cache.iterdir())}"


def test_walkthrough_commands_are_read_from_the_marked_block():
    text = ("intro\n<!-- walkthrough -->\n```bash\ncolbench models tiny ./t  # a comment\n\n"
            "# a note\ncolbench evaluate X \\\n    --limit 5\n```\n<!-- /walkthrough -->\n")
    assert walkthrough_commands(text) == [["colbench", "models", "tiny", "./t"],
                                          ["colbench", "evaluate", "X", "--limit", "5"]]
    with pytest.raises(AssertionError, match="exactly one walkthrough block.*found 0"):
        walkthrough_commands("no markers here")

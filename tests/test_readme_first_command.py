"""The README's first screen (issue 26): its first lines are the two opening commands, and
what follows them fits in 40 lines and gets a newcomer to a result. The first command
evaluates an honest baseline (issue 14): a blind agent, never one that reads hidden data, and
it runs as written (on a few tasks here, to stay quick) and prints the table the README
shows."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import colbench
from colbench.baselines import BlindAgent

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: The most lines the first screen may take: everything above the first ``## `` heading.
FIRST_SCREEN_LINES = 40

#: The README's first lines, exactly: CI (.ci/run) runs the test command these name.
OPENING = """# colbench

```bash
pip install -e . && python -m colbench evaluate colbench/Backend-v0 --model scripted:no-ask
```

```bash
bash .ci/test
```
"""


def readme() -> str:
    return README.read_text(encoding="utf-8")


def first_screen(text: str) -> str:
    """Everything above the README's first ``## `` heading."""
    match = re.search(r"^## ", text, re.MULTILINE)
    assert match, "the README has no ## heading"
    return text[:match.start()]


def first_command() -> list[str]:
    """The colbench command of the README's first bash block (after ``pip install ... &&``)."""
    block = re.search(r"```bash\n(.*?)```", readme(), re.DOTALL)
    assert block, "the README has no bash block"
    line = block.group(1).strip().split("&&")[-1]
    return shlex.split(line)


def printed_table(screen: str) -> list[str]:
    """The lines of the first plain code block of the first screen: what the command
    printed, as the README shows it."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in screen.splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
                blocks.append((line[3:].strip(), current))
            else:
                current = None
        elif current is not None:
            current.append(line)
    plain = [lines for info, lines in blocks if not info]
    assert plain, "the first screen does not show what the first command prints"
    return plain[0]


def test_the_readme_opens_with_the_two_commands():
    assert readme().startswith(OPENING)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash .ci/test" in ci


def test_the_first_screen_fits_in_40_lines():
    screen = first_screen(readme())
    lines = screen.splitlines()
    assert len(lines) <= FIRST_SCREEN_LINES, \
        f"the first screen takes {len(lines)} lines, more than {FIRST_SCREEN_LINES}"
    # What colbench is, what the first command printed and means, install, links onward.
    assert "colbench is a" in screen
    assert "pip install -e '.[EXTRA]'" in screen
    assert "blind baseline" in screen and "scripted:oracle" in screen
    links = re.findall(r"\]\((docs/[^)#]+)", screen)
    assert {"docs/glossary.md", "docs/statistics.md", "docs/protocols.md",
            "docs/sandbox.md"} <= set(links)
    for link in links:
        assert (ROOT / link).is_file(), f"the first screen links {link}, which is missing"
    for anchor in re.findall(r"\]\(#([^)]+)\)", screen):
        headings = re.findall(r"^#+ (.+)$", readme(), re.MULTILINE)
        slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
        assert anchor in slugs, f"the first screen links #{anchor}, which no heading makes"


def test_the_first_command_evaluates_a_blind_baseline():
    argv = first_command()
    assert argv[:4] == ["python", "-m", "colbench", "evaluate"]
    env_id, model = argv[4], argv[argv.index("--model") + 1]
    assert model.startswith("scripted:")
    env = colbench.make(env_id)
    try:
        agent = env.unwrapped.scripted_agents[model.removeprefix("scripted:")]
    finally:
        env.close()
    assert issubclass(agent, BlindAgent) and not agent.sees_privileged
    paragraph = next(p for p in first_screen(readme()).split("\n\n")
                     if p.startswith("The first command"))
    assert "blind baseline" in paragraph


def test_the_first_command_runs_and_prints_the_readme_table(tmp_path):
    argv = first_command()
    model = argv[argv.index("--model") + 1]
    argv = [sys.executable, *argv[1:], "--limit", "5", "--out", str(tmp_path / "run"),
            "--no-progress"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert model in done.stdout and "0.0 [" in done.stdout  # the blind floor: no success
    shown = printed_table(first_screen(readme()))
    printed = [line.rstrip() for line in done.stdout.splitlines() if line.strip()]
    header = shown[0].rstrip()
    assert header in printed, f"the README shows the header {header!r}; the run printed " \
        f"{printed}"
    row = printed[printed.index(header) + 2]
    assert row.split()[1:3] == shown[2].split()[1:3]  # env and model columns


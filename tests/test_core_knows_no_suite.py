"""The core (``colbench/``) knows no suite: no suite's name and no suite's task field appear in
its code, outside docstrings and help-text examples ("e.g. colbench/Backend-v0"); what a
suite contributes to the CLI (scorer names, protocol names) comes from its manifest."""

import ast
import re
from pathlib import Path

import pytest

from colbench import suites

ROOT = Path(__file__).resolve().parents[1]
#: Suite-specific fields of published task rows, which only the suite may read.
SUITE_FIELDS = ("problem_description",)
#: Protocol names that belong to no single suite: ``colbench`` (the core's own) and
#: ``agentgym`` (AgentGym's wire format, which colbench/serve speaks for every env, as it
#: speaks MCP's).
SHARED_PROTOCOLS = {"colbench", "agentgym", "agentgym-rl"}


def suite_words() -> list[str]:
    """What names a suite: its env ids' stems and families, and its own protocols."""
    words = set(SUITE_FIELDS)
    for found in suites.manifests().values():
        if len(found.name) >= 7:  # "web", "craft", "search" are everyday words
            words.add(found.name)
        for env_id in found.envs:
            stem = re.sub(r"-v\d+$", "", env_id.rpartition("/")[2])
            if len(stem) >= 6:  # "Web" alone is any web page
                words.add(stem)
        words.update(found.families)
        words.update(set(found.protocols) - SHARED_PROTOCOLS)
    return sorted(words)


def offences(source: str, words: list[str], where: str) -> list[str]:
    """``where:line: text`` of each non-docstring string or name that says one of ``words``
    (an example after "e.g." excepted)."""
    # A whole word: not inside another ("backends", "submodule_search_locations").
    alternatives = "|".join(re.escape(w).replace(r"\-", "[-_]") for w in words)
    pattern = re.compile(f"(?<![A-Za-z_])(?:{alternatives})(?![a-z_])", re.I)
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if id(node) in docstrings or "e.g." in text:
                continue
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        else:
            continue
        if pattern.search(text):
            found.append(f"{where}:{node.lineno}: {text[:80]!r}")
    return found


#: Help texts that name a suite as an example without saying "e.g." (file, words).
EXAMPLES = {("colbench/cli/list_cmd.py", "(BabyAI's levels)")}


def test_the_core_names_no_suite_outside_docstrings_and_examples():
    words = suite_words()
    assert {"Backend", "TextCraft", "babyai", "sweet-rl", "problem_description"} <= set(words)
    found = []
    for path in sorted((ROOT / "colbench").rglob("*.py")):
        where = str(path.relative_to(ROOT))
        found += [offence for offence in offences(path.read_text(), words, where)
                  if not any(where == file and text in offence for file, text in EXAMPLES)]
    assert found == []


@pytest.mark.parametrize("code", [
    "HELP = 'scorer (frontend: clip)'",
    "if 'problem_description' in row: pass",
    "def f(args): return args.sweet_rl",
])
def test_the_scan_sees_a_suite_named_in_code(code):
    assert offences(code, suite_words(), "planted") != []


def test_examples_and_docstrings_may_name_a_suite():
    code = '"""Runs colbench/Backend-v0."""\nHELP = "env id, e.g. colbench/Backend-v0"\n'
    assert offences(code, suite_words(), "planted") == []


def test_task_file_format_is_what_the_suite_says(tmp_path):
    from colbench.errors import ConfigError
    from colbench.taskcache import detect_format

    path = tmp_path / "rows.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\n')
    assert detect_format(path, "X row (question, answer)", official_fields=("question",)) \
        == "official"
    with pytest.raises(ConfigError, match=r"nor a X row \(question, answer\); found"):
        detect_format(path, "X row (question, answer)", official_fields=("problem_description",))
    path.write_text('{"id": "t1", "prompt": "p"}\n')
    assert detect_format(path, "X row", official_fields=("question",)) == "colbench"


def test_evaluate_help_lists_the_installed_suites_scorers_and_protocols():
    from colbench.cli.evaluate_cmd import protocols_by_suite
    from colbench.cli.main import build_parser

    text = build_parser().parse_args(["evaluate", "x", "--model", "m"]).__dict__
    assert "compat" not in text  # a suite's flag is an --env-arg, not the core's
    listing = protocols_by_suite()
    for name, found in suites.manifests().items():
        if found.protocols:
            assert f"{name}: {', '.join(found.protocols)}" in listing

"""Facts with one owner (issue 27): each is defined in one place, and the others read it."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("colbench", "gyms", "trainers", "plugins", "leaderboard")


def sources() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), path.read_text())
            for part in PARTS for path in sorted((ROOT / part).rglob("*.py"))]


def assignments_of(name: str) -> list[str]:
    """``file:line`` of each module-level assignment to ``name``."""
    found = []
    for where, text in sources():
        for node in ast.parse(text).body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found.append(f"{where}:{node.lineno}")
    return found


def test_the_model_failure_metrics_have_one_owner():
    import importlib

    from colbench import replay
    from colbench.records import MODEL_FAILURE_METRICS

    evaluate = importlib.import_module("colbench.runner.evaluate")  # the package exports a verb

    assert assignments_of("MODEL_FAILURE_METRICS") == [
        f"colbench/records.py:{_line('colbench/records.py', 'MODEL_FAILURE_METRICS:')}"]
    assert replay.MODEL_FAILURE_METRICS is MODEL_FAILURE_METRICS
    assert evaluate.MODEL_FAILURE_METRICS is MODEL_FAILURE_METRICS
    # Nor written out inline (the leaderboard's verifier did), in either order or as keywords.
    inline = re.compile(r"""\{\s*["']success["']:\s*False,\s*["']score["']:\s*0(\.0)?\s*\}"""
                        r"""|\{\s*["']score["']:\s*0(\.0)?,\s*["']success["']:\s*False\s*\}"""
                        r"""|score=0(\.0)?,\s*success=False\b|success=False,\s*score=0""")
    assert [where for where, text in sources() if inline.search(text)] == ["colbench/records.py"]


def test_the_default_turn_budget_has_one_owner():
    from colbench.env import DEFAULT_MAX_TURNS, TextEnv
    from colbench.leaderboard.challenge import turn_budget

    assert TextEnv.default_max_turns == DEFAULT_MAX_TURNS
    assert turn_budget(None) == DEFAULT_MAX_TURNS and turn_budget(4) == 4
    assert "or 10" not in (ROOT / "leaderboard" / "challenge.py").read_text()


def test_the_default_protocol_has_one_owner():
    from colbench.leaderboard import _db, queries
    from colbench.protocols import DEFAULT_PROTOCOL

    assert assignments_of("DEFAULT_PROTOCOL") == [
        f"colbench/protocols.py:{_line('colbench/protocols.py', 'DEFAULT_PROTOCOL =')}"]
    assert queries.DEFAULT_PROTOCOL is DEFAULT_PROTOCOL
    column = _db.Submission.__table__.c.protocol
    assert column.default.arg == DEFAULT_PROTOCOL and column.server_default.arg == DEFAULT_PROTOCOL
    # Nor written out as a default elsewhere (migrations are history and keep theirs).
    literal = re.compile(r"""(protocol\b[^\n=]*=\s*|default=)["']colbench["']""")
    assert [where for where, text in sources() if literal.search(text)
            and "/migrations/" not in where] == []


def _line(path: str, prefix: str) -> int:
    lines = (ROOT / path).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(prefix))

"""The dependency rules between colbench's parts, read from the source with ``ast``.

colbench is one distribution whose top-level folders map onto ``colbench.*`` through
setuptools' ``package-dir`` (pyproject.toml). Each folder is a part: the core (``colbench/``),
each env under ``gyms/`` (``gyms/backend``, ``gyms/frontend``, ``gyms/web``...), ``trainers/``,
``leaderboard/`` and ``plugins/``. The rule, as docs/architecture.md states it: **a module
imports its own part and the core, nothing else.** In particular:

- the core imports no part (it finds them through the registries and their entry points);
- no env imports another env (what two envs share lives in the core);
- gyms and trainers never import each other;
- the leaderboard imports no env and no trainer (it finds a suite's replay by env id).

Every import counts, wherever it is written: top-level and lazy ones inside functions,
``importlib.import_module("...")`` and ``__import__("...")`` with a literal name, and, in the
core, any string that is a whole module path or entry-point target of another part
(``"colbench.gyms.backend.env:BackendEnv"``), since the core could load it by name.

The checker is a function of a source root, so that a test can plant violations in a small
tree and see it catch them.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project runs on 3.11, ruff targets 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "colbench"
CORE = "core"
GYMS = "gyms"

#: A string that names a colbench module, or an entry-point target in it.
_MODULE_PATH = re.compile(r"colbench(?:\.\w+)+(?::[\w.]+)?")
_IMPORT_FUNCTIONS = {"import_module", "__import__"}


@dataclass(frozen=True)
class Layout:
    """Which folder holds which part, as pyproject.toml's ``package-dir`` maps them."""

    root: Path
    #: import prefix -> folder, for every part but the core (``colbench.gyms`` -> ``gyms``).
    parts: dict[str, str]
    #: the core's folder (``colbench``).
    core_dir: str
    #: the env packages under the gyms folder (``backend``, ``frontend``...).
    envs: frozenset[str]

    @classmethod
    def read(cls, root: Path) -> Layout:
        config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        package_dir = dict(config["tool"]["setuptools"]["package-dir"])
        core_dir = package_dir.pop(PACKAGE, PACKAGE)
        gyms_dir = package_dir.get(f"{PACKAGE}.{GYMS}")
        envs: frozenset[str] = frozenset()
        if gyms_dir is not None and (root / gyms_dir).is_dir():
            envs = frozenset(p.parent.name for p in (root / gyms_dir).glob("*/__init__.py"))
        return cls(root=root, parts=package_dir, core_dir=core_dir, envs=envs)

    def part_of(self, module: str) -> str | None:
        """The part a module belongs to (``core``, ``gyms/backend``, ``trainers``...); None
        for anything outside colbench (the standard library, third-party packages)."""
        if module != PACKAGE and not module.startswith(PACKAGE + "."):
            return None
        for prefix in sorted(self.parts, key=len, reverse=True):
            if module == prefix or module.startswith(prefix + "."):
                folder = self.parts[prefix]
                if prefix == f"{PACKAGE}.{GYMS}":
                    env = module[len(prefix) + 1:].split(".", 1)[0]
                    if env in self.envs:
                        return f"{folder}/{env}"
                return folder
        return CORE

    def modules(self) -> list[tuple[Path, str]]:
        """Every source file with its module name (``gyms/backend/env.py`` ->
        ``colbench.gyms.backend.env``)."""
        found: list[tuple[Path, str]] = []
        roots = [(PACKAGE, self.core_dir), *self.parts.items()]
        for prefix, folder in roots:
            base = self.root / folder
            for path in sorted(base.rglob("*.py")):
                relative = path.relative_to(base).with_suffix("")
                names = [n for n in relative.parts if n != "__pycache__"]
                if len(names) != len(relative.parts):
                    continue
                if prefix == PACKAGE and names and f"{PACKAGE}.{names[0]}" in self.parts:
                    continue  # a part's folder nested in the core's (not the case today)
                if names[-1] == "__init__":
                    names = names[:-1]
                found.append((path, ".".join([prefix, *names])))
        return found


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    source: str
    target: str
    imported: str

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: {self.source} -> {self.target} "
                f"(imports {self.imported})")


def allowed(source: str, target: str) -> bool:
    """A part imports itself and the core; nothing else (see the module docstring)."""
    return target in (source, CORE)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of docstring constants: prose, never an import."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def imported_names(tree: ast.AST, module: str, is_package: bool,
                   strings: bool) -> list[tuple[int, str]]:
    """``(line, module path)`` for everything ``tree`` imports, at any depth.

    ``from X import a`` counts as ``X.a`` (a submodule or an attribute of X: either way in X's
    part). ``strings`` also counts string constants that are a colbench module path or an
    entry-point target.
    """
    package = module if is_package else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    docstrings = _docstring_nodes(tree) if strings else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - (node.level - 1)]
                base = ".".join([*parent, base]) if base else ".".join(parent)
            out += [(node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base)
                    for alias in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if (name in _IMPORT_FUNCTIONS and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                out.append((node.lineno, node.args[0].value))
        elif (strings and isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docstrings and _MODULE_PATH.fullmatch(node.value)):
            out.append((node.lineno, node.value.partition(":")[0]))
    # An import_module("...") call is also a string constant: count each edge once.
    return sorted(set(out))


def find_violations(root: Path) -> list[Violation]:
    """Every forbidden import edge in the source tree at ``root``."""
    layout = Layout.read(root)
    violations: list[Violation] = []
    for path, module in layout.modules():
        source = layout.part_of(module)
        assert source is not None
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = imported_names(tree, module, path.name == "__init__.py",
                               strings=source == CORE)
        for line, imported in names:
            target = layout.part_of(imported)
            if target is not None and not allowed(source, target):
                violations.append(Violation(str(path.relative_to(root)), line, source, target,
                                            imported))
    return violations


def private_owner(imported: str) -> str | None:
    """The module or package that keeps ``imported`` private, if it is private: everything
    before its first name that starts with ``_`` (``colbench.sandbox._wire`` is the sandbox
    package's; ``colbench.x.app._tags`` is module ``app``'s). Dunder names are public."""
    parts = imported.split(".")
    for index, name in enumerate(parts):
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            return ".".join(parts[:index])
    return None


def find_private_imports(root: Path) -> list[Violation]:
    """Every import of a ``_name`` from outside the package or module that owns it."""
    layout = Layout.read(root)
    violations: list[Violation] = []
    for path, module in layout.modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, imported in imported_names(tree, module, path.name == "__init__.py",
                                             strings=False):
            owner = private_owner(imported)
            if (owner is not None and layout.part_of(imported) is not None
                    and module != owner and not module.startswith(owner + ".")):
                violations.append(Violation(str(path.relative_to(root)), line, module,
                                            f"private to {owner}", imported))
    return violations


# -- the rules on colbench itself ------------------------------------------------------------

def test_no_part_imports_another_part_and_the_core_imports_none():
    violations = find_violations(ROOT)
    assert not violations, ("forbidden imports (a module imports its own part and the core, "
                            "nothing else; see docs/architecture.md):\n"
                            + "\n".join(f"  {v}" for v in violations))


def test_nothing_outside_a_package_imports_its_private_names():
    violations = find_private_imports(ROOT)
    assert not violations, ("imports of private names (a name starting with _ is private to "
                            "the package or module that holds it; import the package's "
                            "public API instead):\n" + "\n".join(f"  {v}" for v in violations))


def test_the_layout_is_read_from_pyproject():
    layout = Layout.read(ROOT)
    assert layout.parts[f"{PACKAGE}.{GYMS}"] == "gyms"
    assert {"backend", "frontend", "web", "craft", "embodied"} <= layout.envs
    assert layout.part_of("colbench.runner.evaluate") == CORE
    assert layout.part_of("colbench.gyms.frontend.render.dom") == "gyms/frontend"
    assert layout.part_of("colbench.gyms") == "gyms"
    assert layout.part_of("colbench.trainers.rft_trainer") == "trainers"
    assert layout.part_of("json") is None
    checked = {module for _, module in layout.modules()}
    assert {"colbench", "colbench.registry", "colbench.gyms.backend.env",
            "colbench.leaderboard.app", "colbench.plugins"} <= checked


# -- the checker catches what it should ------------------------------------------------------

def _tree(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text(
        '[tool.setuptools.package-dir]\n"colbench" = "colbench"\n"colbench.gyms" = "gyms"\n'
        '"colbench.trainers" = "trainers"\n"colbench.leaderboard" = "leaderboard"\n'
        '"colbench.plugins" = "plugins"\n')
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in ("colbench", "gyms", "gyms/alpha", "gyms/beta", "trainers", "leaderboard",
                   "plugins"):
        init = root / folder / "__init__.py"
        init.parent.mkdir(parents=True, exist_ok=True)
        if not init.exists():
            init.write_text("")
    return root


def test_the_checker_catches_planted_violations(tmp_path):
    root = _tree(tmp_path, {
        # allowed: own part, the core, third-party, prose that names a part
        "colbench/ok.py": ('"""Mentions colbench.gyms.alpha.env:Env in prose."""\n'
                           "import json\nfrom colbench import registry\n"
                           "MESSAGE = 'see colbench.gyms.alpha for an example env'\n"),
        "gyms/alpha/env.py": "from . import rules\nfrom colbench.gyms.alpha.rules import X\n",
        "gyms/alpha/rules.py": "X = 1\n",
        "trainers/data.py": "from colbench.tasks import Task\n",
        # forbidden, one of each kind
        "colbench/lazy.py": ("def load():\n"
                             "    from colbench.trainers import data\n"
                             "    return data\n"),
        "colbench/by_name.py": ("import importlib\n\n"
                                "def load():\n"
                                "    return importlib.import_module('colbench.leaderboard.app')\n"),
        "colbench/entry.py": "BUILTIN = {'alpha': 'colbench.gyms.alpha.env:Env'}\n",
        "gyms/beta/env.py": "\n\nfrom ..alpha import rules\n",
        "gyms/beta/train.py": "import colbench.trainers.data\n",
        "trainers/envs.py": "from colbench.gyms import alpha\n",
        "leaderboard/replay.py": "x = __import__('colbench.gyms.beta.env')\n",
        "plugins/run.py": "from colbench.trainers.data import *\n",
    })
    found = sorted(str(v) for v in find_violations(root))
    assert found == sorted([
        "colbench/lazy.py:2: core -> trainers (imports colbench.trainers.data)",
        "colbench/by_name.py:4: core -> leaderboard (imports colbench.leaderboard.app)",
        "colbench/entry.py:1: core -> gyms/alpha (imports colbench.gyms.alpha.env)",
        "gyms/beta/env.py:3: gyms/beta -> gyms/alpha (imports colbench.gyms.alpha.rules)",
        "gyms/beta/train.py:1: gyms/beta -> trainers (imports colbench.trainers.data)",
        "trainers/envs.py:1: trainers -> gyms/alpha (imports colbench.gyms.alpha)",
        "leaderboard/replay.py:1: leaderboard -> gyms/beta (imports colbench.gyms.beta.env)",
        "plugins/run.py:1: plugins -> trainers (imports colbench.trainers.data)",
    ])


def test_the_checker_catches_private_imports(tmp_path):
    root = _tree(tmp_path, {
        "colbench/box/__init__.py": "from colbench.box._impl import run\n",
        "colbench/box/_impl.py": "from colbench.box import _wire\n\ndef run(): ...\n",
        "colbench/box/_wire.py": "from colbench import __version__\n",
        "colbench/box/inner/use.py": "from colbench.box._wire import x\n",
        "colbench/other.py": "from colbench.box._impl import run\n",
        "gyms/alpha/app.py": "def _helper(): ...\n",
        "gyms/alpha/tasks.py": "\nfrom colbench.gyms.alpha.app import _helper\n",
    })
    assert sorted(str(v) for v in find_private_imports(root)) == [
        "colbench/other.py:1: colbench.other -> private to colbench.box "
        "(imports colbench.box._impl.run)",
        "gyms/alpha/tasks.py:2: colbench.gyms.alpha.tasks -> private to "
        "colbench.gyms.alpha.app (imports colbench.gyms.alpha.app._helper)",
    ]


def test_a_clean_tree_has_no_violations(tmp_path):
    root = _tree(tmp_path, {"gyms/alpha/env.py": "from colbench.env import TextEnv\n"})
    assert find_violations(root) == []

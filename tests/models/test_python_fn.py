"""``python:`` agents: files and modules, async functions, callable classes, and errors that
name the file and the function."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from colbench.errors import ConfigError
from colbench.models.python_fn import FunctionModel, is_file_target
from colbench.models.spec import load_model

HELLO = [{"role": "user", "content": "hello"}]


def _reply(model: FunctionModel) -> str:
    return asyncio.run(model.agenerate([HELLO]))[0].text


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    path = tmp_path / "agents" / "my_agent.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent('''
        from helper_beside import PREFIX

        def echo(messages):
            return PREFIX + messages[-1]["content"]

        async def async_echo(messages):
            return "async " + messages[-1]["content"]

        class Counter:
            def __init__(self):
                self.calls = 0

            def __call__(self, messages):
                self.calls += 1
                return f"{self.calls}:{messages[-1]['content']}"

        class AsyncAgent:
            async def __call__(self, messages, params):
                return f"{params.max_tokens}"

        class NotAnAgent:
            pass

        class NeedsArgs:
            def __init__(self, x):
                pass

            def __call__(self, messages):
                return "x"

        NUMBER = 3
    '''))
    (path.parent / "helper_beside.py").write_text("PREFIX = '> '\n")
    yield path
    sys.modules.pop("helper_beside", None)


def test_a_file_path_with_a_function(agent_file, monkeypatch):
    monkeypatch.chdir(agent_file.parent.parent)
    model = load_model("python:agents/my_agent.py:echo")
    assert isinstance(model, FunctionModel)
    assert model.name == "python:agents/my_agent.py:echo"
    assert _reply(model) == "> hello"
    assert _reply(load_model("python:./agents/my_agent.py:echo")) == "> hello"
    assert _reply(load_model(f"python:{agent_file}:async_echo")) == "async hello"


def test_a_class_with_call_is_instantiated_once(agent_file):
    model = load_model(f"python:{agent_file}:Counter")
    assert _reply(model) == "1:hello"
    assert _reply(model) == "2:hello"  # one instance keeps its state


def test_an_async_call_method_gets_the_sampling_params(agent_file):
    from colbench.models.base import SamplingParams

    model = load_model(f"python:{agent_file}:AsyncAgent")
    [out] = asyncio.run(model.agenerate([HELLO], SamplingParams(max_tokens=7)))
    assert out.text == "7"


def test_a_module_in_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "cwd_agent_mod_xyz.py").write_text("def reply(messages):\n    return 'cwd'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        assert _reply(load_model("python:cwd_agent_mod_xyz:reply")) == "cwd"
    finally:
        sys.modules.pop("cwd_agent_mod_xyz", None)


@pytest.mark.parametrize("name, needle", [
    ("missing", r"has no attribute 'missing' \(it defines: AsyncAgent, Counter, NeedsArgs"),
    ("NUMBER", "'NUMBER' in .* is a int, not callable"),
    ("NotAnAgent", "class 'NotAnAgent' .* is not callable: give it a __call__"),
    ("NeedsArgs", "class 'NeedsArgs' .* failed .*without arguments.*TypeError"),
])
def test_errors_name_the_file_and_the_function(agent_file, name, needle):
    with pytest.raises(ConfigError, match=needle) as caught:
        load_model(f"python:{agent_file}:{name}")
    assert str(agent_file) in str(caught.value)


def test_a_missing_file_and_a_file_that_raises(tmp_path):
    with pytest.raises(ConfigError, match="no file .*nope.py"):
        load_model(f"python:{tmp_path}/nope.py:fn")
    broken = tmp_path / "broken_agent.py"
    broken.write_text("x = 1\nraise RuntimeError('bad setup')\n")
    with pytest.raises(ConfigError, match=r"importing .*broken_agent.py.* failed: line 2: "
                                          "RuntimeError: bad setup"):
        load_model(f"python:{broken}:fn")
    syntax = tmp_path / "syntax_agent.py"
    syntax.write_text("def f(:\n")
    with pytest.raises(ConfigError, match="line 1: SyntaxError"):
        load_model(f"python:{syntax}:f")


def test_a_missing_module_names_it():
    with pytest.raises(ConfigError, match="python:no_such_mod_qq:f: cannot import module "
                                          "'no_such_mod_qq': no such module"):
        load_model("python:no_such_mod_qq:f")
    with pytest.raises(ConfigError, match="python:module:callable"):
        load_model("python:agent.py")


def test_which_targets_are_files():
    assert is_file_target("agent.py") and is_file_target("dir/agent")
    assert not is_file_target("pkg.module")

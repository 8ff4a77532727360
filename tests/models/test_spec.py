"""Model specs: parsing, ``load_model``, and the ``python:`` and ``scripted:`` kinds."""

from __future__ import annotations

import asyncio
import io
import textwrap

import pytest

from colbench import registry
from colbench.errors import ConfigError
from colbench.models import BaseChatModel, Completion, SamplingParams, load_model
from colbench.models.base import EpisodeContext
from colbench.models.options import apply_sampling, pop_sampling
from colbench.models.python_fn import FunctionModel
from colbench.models.scripted import HumanModel, ScriptedModel
from colbench.models.spec import split_options

HELLO = [{"role": "user", "content": "hello"}]


# -- parsing ----------------------------------------------------------------------------------

def test_split_options():
    assert split_options("./ckpt") == ("./ckpt", {})
    assert split_options("./ckpt?adapter=./lora&dtype=float32") == (
        "./ckpt", {"adapter": "./lora", "dtype": "float32"})
    assert split_options("m@http://h:1/v1?stop=%0A%0A&seed=") == (
        "m@http://h:1/v1", {"stop": "\n\n", "seed": ""})


def test_split_options_rejects_a_malformed_query():
    with pytest.raises(ConfigError, match="bad options"):
        split_options("./ckpt?adapter")


def test_sampling_options_are_typed_and_override_the_callers():
    options = {"temperature": "0.7", "max_tokens": "64", "top_p": "0.9", "seed": "3",
               "stop": '["###","\\n\\n"]', "logprobs": "yes", "other": "kept"}
    overrides = pop_sampling("x", options)
    assert options == {"other": "kept"}
    params = apply_sampling(SamplingParams(temperature=0.0, max_tokens=5), overrides)
    assert params == SamplingParams(temperature=0.7, max_tokens=64, top_p=0.9, seed=3,
                                    stop=("###", "\n\n"), logprobs=True)
    assert apply_sampling(None, {}) == SamplingParams()


@pytest.mark.parametrize("key, value", [
    ("temperature", "-1"), ("max_tokens", "0"), ("top_p", "0"), ("seed", "1.5"),
    ("stop", ""), ("stop", '["a", 3]'), ("logprobs", "sometimes"), ("temperature", "nan"),
])
def test_bad_sampling_options(key, value):
    with pytest.raises(ConfigError, match=key):
        pop_sampling("x", {key: value})


# -- load_model -------------------------------------------------------------------------------

def test_spec_without_a_kind_lists_the_kinds():
    with pytest.raises(ConfigError, match="no kind prefix") as info:
        load_model("gpt-4o")
    for kind in ("openai:...", "hf:...", "vllm:...", "python:...", "scripted:..."):
        assert kind in str(info.value)


def test_spec_that_is_not_a_string():
    with pytest.raises(ConfigError, match="no kind prefix"):
        load_model(None)  # type: ignore[arg-type]


def test_unknown_kind_suggests_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'openai'"):
        load_model("opneai:gpt-4o")


def test_factory_gets_the_rest_and_kwargs_and_the_model_is_named_after_the_spec():
    seen = {}

    class Echo(BaseChatModel):
        def generate(self, conversations, params=None):
            return [Completion(text="ok") for _ in conversations]

    def factory(rest, **kwargs):
        seen.update(rest=rest, kwargs=kwargs)
        return Echo()

    registry.models.register("test-echo", factory)
    try:
        model = load_model("test-echo:abc?x=1", flavour="plain")
        assert seen == {"rest": "abc?x=1", "kwargs": {"flavour": "plain"}}
        assert model.name == "test-echo:abc?x=1"
        assert model.generate([HELLO])[0].text == "ok"
        assert asyncio.run(model.agenerate([HELLO, HELLO]))[1].text == "ok"
    finally:
        registry.models.unregister("test-echo")


def test_factory_returning_something_else_is_rejected():
    registry.models.register("test-bad", lambda rest, **kw: object())
    try:
        with pytest.raises(ConfigError, match="not a ChatModel"):
            load_model("test-bad:x")
    finally:
        registry.models.unregister("test-bad")


# -- python: ----------------------------------------------------------------------------------

@pytest.fixture
def agent_module(tmp_path, monkeypatch):
    (tmp_path / "colbench_test_agents.py").write_text(textwrap.dedent('''
        from colbench.models import Completion

        def last_upper(messages):
            return messages[-1]["content"].upper()

        def with_params(messages, params):
            return f"{params.max_tokens}:{params.temperature}"

        async def async_reply(messages):
            return "async " + messages[-1]["content"]

        def full(messages):
            return Completion(text="full", completion_tokens=1)

        def wrong_type(messages):
            return 42

        NOT_CALLABLE = "just text"
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "colbench_test_agents"


def test_python_function_of_messages(agent_module):
    model = load_model(f"python:{agent_module}:last_upper")
    assert isinstance(model, FunctionModel)
    assert model.name == f"python:{agent_module}:last_upper"
    assert [c.text for c in model.generate([HELLO, [{"role": "user", "content": "b"}]])] == [
        "HELLO", "B"]


def test_python_function_that_takes_params(agent_module):
    model = load_model(f"python:{agent_module}:with_params")
    [out] = model.generate([HELLO], SamplingParams(max_tokens=9, temperature=0.5))
    assert out.text == "9:0.5"


def test_python_coroutine_and_completion_results(agent_module):
    assert asyncio.run(load_model(f"python:{agent_module}:async_reply").agenerate([HELLO]))[
        0].text == "async hello"
    [out] = load_model(f"python:{agent_module}:full").generate([HELLO])
    assert (out.text, out.completion_tokens) == ("full", 1)


def test_python_function_returning_a_non_string(agent_module):
    model = load_model(f"python:{agent_module}:wrong_type")
    with pytest.raises(TypeError, match="must return a str"):
        model.generate([HELLO])


@pytest.mark.parametrize("spec, needle", [
    ("python:justamodule", "python:module:callable"),
    ("python:colbench_no_such_module_xyz:f", "cannot import module"),
    ("python:json:no_such_function", "has no attribute"),
])
def test_python_spec_errors(spec, needle):
    with pytest.raises(ConfigError, match=needle):
        load_model(spec)


def test_python_spec_naming_a_non_callable(agent_module):
    with pytest.raises(ConfigError, match="not callable"):
        load_model(f"python:{agent_module}:NOT_CALLABLE")


# -- scripted: --------------------------------------------------------------------------------

class FakeAgent:
    def act(self, messages):
        return f"saw {len(messages)} message(s)"


class FakeEnv:
    def __init__(self):
        self.unwrapped = self
        self.asked: list[str] = []

    def scripted_agent(self, name):
        self.asked.append(name)
        return FakeAgent()


def test_scripted_needs_a_name():
    with pytest.raises(ConfigError, match="needs a name"):
        load_model("scripted:")


def test_scripted_acts_only_inside_an_episode():
    model = load_model("scripted:oracle")
    assert isinstance(model, ScriptedModel) and model.name == "scripted:oracle"
    with pytest.raises(ConfigError, match="inside an episode"):
        model.generate([HELLO])


def test_scripted_binds_to_the_episodes_env():
    env = FakeEnv()
    context = EpisodeContext(env_id="fake", task_id="t", trial=0, seed=1)
    bound = load_model("scripted:no-ask").bind_episode(env, context)
    assert env.asked == ["no-ask"]
    assert bound.name == "scripted:no-ask"
    assert bound.generate([HELLO + HELLO])[0].text == "saw 2 message(s)"
    assert asyncio.run(bound.agenerate([HELLO]))[0].text == "saw 1 message(s)"


def test_scripted_human_reads_multi_line_replies_from_the_terminal():
    assert isinstance(load_model("scripted:human"), HumanModel)
    out = io.StringIO()
    human = HumanModel(stdin=io.StringIO("first line\nsecond line\n.\nlast\n"), stdout=out)
    assert human.generate([HELLO])[0].text == "first line\nsecond line"
    assert human.generate([HELLO])[0].text == "last"  # end of input ends the reply
    assert "your message" in out.getvalue()
    with pytest.raises(EOFError):
        human.generate([HELLO])

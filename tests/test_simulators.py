"""Choosing a simulated human through ``registry.simulators`` (colbench/simulators.py)."""

from __future__ import annotations

import pytest

from colbench import registry
from colbench.errors import ConfigError
from colbench.models.base import SamplingParams
from colbench.models.python_fn import FunctionModel
from colbench.simulators import ModelBackedSimulator, flip_roles, make_simulator


class EchoSimulator:
    """A user's own simulated human."""

    name = "echo"

    def reply(self, task, dialogue, message):
        return message


class ToyModelSimulator(ModelBackedSimulator):
    """A suite's model-backed kind, as a suite registers it."""

    def __init__(self, model):
        super().__init__(model, max_chars=100, params=SamplingParams(max_tokens=8))

    def reply(self, task, dialogue, message):
        return self.ask(flip_roles(dialogue, message))


class NoReply:
    name = "broken"


@pytest.fixture
def toy_suite(tmp_path, monkeypatch):
    """A suite ``toy`` with a built-in and a model-backed simulator, a user's ``echo``, and a
    model function ``toy_sim_model:shout`` importable as ``python:toy_sim_model:shout``."""
    (tmp_path / "toy_sim_model.py").write_text(
        "def shout(messages):\n"
        "    return messages[-1]['content'].upper()\n"
        "class Sim:\n"
        "    name = 'imported'\n"
        "    def reply(self, task, dialogue, message):\n"
        "        return 'imported'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.simulators.register("toy/builtin", EchoSimulator)
    registry.simulators.register("toy/model", ToyModelSimulator)
    registry.simulators.register("echo", EchoSimulator)
    registry.simulators.register("other/builtin", EchoSimulator)
    registry.simulators.register("toy/broken", NoReply)
    yield "toy"
    for name in ("toy/builtin", "toy/model", "echo", "other/builtin", "toy/broken"):
        registry.simulators.unregister(name)


def test_builtin_and_empty_specs_pick_the_suites_builtin(toy_suite):
    for spec in (None, "", " builtin ", "toy/builtin"):
        assert isinstance(make_simulator(spec, suite=toy_suite), EchoSimulator)


def test_model_specs_pick_the_suites_model_kind(toy_suite):
    for spec in ("python:toy_sim_model:shout", "model:python:toy_sim_model:shout"):
        sim = make_simulator(spec, suite=toy_suite)
        assert isinstance(sim, ToyModelSimulator)
        assert sim.name == "model:python:toy_sim_model:shout"
        assert sim.reply(None, [], "hello?") == "HELLO?"


def test_registered_names_module_paths_and_objects(toy_suite):
    assert isinstance(make_simulator("echo", suite=toy_suite), EchoSimulator)
    assert make_simulator("toy_sim_model:Sim", suite=toy_suite).name == "imported"
    mine = EchoSimulator()
    assert make_simulator(mine, suite=toy_suite) is mine


@pytest.mark.parametrize("spec, needle", [
    ("model:", "names no model"),
    ("model", "names no model"),
    ("nothing-like-this", "unknown simulator 'nothing-like-this' for the toy suite"),
    ("no-such-kind:model", "neither a model spec"),
    ("other/builtin", "belongs to the other suite"),
    ("broken", "has no reply"),
    (NoReply(), "has no reply"),
])
def test_bad_specs_say_what_was_wrong(toy_suite, spec, needle):
    with pytest.raises(ConfigError, match=needle):
        make_simulator(spec, suite=toy_suite)


def test_a_suite_without_a_model_kind_says_so():
    with pytest.raises(ConfigError, match="the lonely suite has no model-backed simulator"):
        make_simulator("model:python:x:y", suite="lonely")


def test_a_model_built_from_a_spec_is_closed_one_passed_in_is_not(toy_suite):
    closed = []

    class Closable(FunctionModel):
        def close(self):
            closed.append(self)

    given = Closable(lambda messages: "x")
    ToyModelSimulator(given).close()
    assert closed == []
    assert ToyModelSimulator(given).ask([{"role": "user", "content": "q"}]) == "x"


def test_flip_roles_makes_the_agent_the_models_user():
    dialogue = [{"role": "user", "content": "request"}, {"role": "assistant", "content": "q1"},
                {"role": "system", "content": "ignored"}]
    assert flip_roles(dialogue, "q2") == [
        {"role": "assistant", "content": "request"}, {"role": "user", "content": "q1"},
        {"role": "user", "content": "q2"}]
    assert flip_roles(dialogue)[-1] == {"role": "user", "content": "q1"}


def test_the_suites_declare_their_simulators_as_entry_points():
    names = registry.simulators.names()
    for name in ("backend/builtin", "backend/model", "frontend/builtin", "frontend/model"):
        assert name in names


# -- the grammar: a registered name (NAME or NAME:ARGUMENT), or a model spec ------------------

@pytest.mark.parametrize("spec, name, argument", [
    ("builtin", "toy/builtin", None),
    ("toy/builtin", "toy/builtin", None),
    ("echo", "echo", None),
    ("echo:loud", "echo", "loud"),  # NAME:ARGUMENT (as the leaderboard's challenge:URL)
    ("model:openai:gpt-4o", "toy/model", "openai:gpt-4o"),
    ("openai:gpt-4o@http://h:1/v1", "toy/model", "openai:gpt-4o@http://h:1/v1"),
    ("toy_sim_model:Sim", None, None),  # a module:Class path (command line only)
])
def test_every_spec_is_a_registered_name_or_a_model_spec(toy_suite, spec, name, argument):
    from colbench.simulators import parse_simulator_spec

    parsed = parse_simulator_spec(spec, suite=toy_suite)
    assert (parsed.name, parsed.argument) == (name, argument)


def test_no_spec_is_the_default_the_suites_manifest_declares(toy_suite, monkeypatch):
    from colbench import simulators
    from colbench.suites import SuiteManifest

    registry.simulators.register("toy/quiet", EchoSimulator)
    try:
        manifest = SuiteManifest(name="toy", description="a toy", default_simulator="toy/quiet",
                                 simulators={"toy/quiet": "tests:Quiet",
                                             "toy/builtin": "tests:Echo"})
        monkeypatch.setattr(simulators.suites, "manifests", lambda: {"toy": manifest})
        assert simulators.parse_simulator_spec(None, suite="toy").name == "toy/quiet"
        assert simulators.parse_simulator_spec("", suite="toy").name == "toy/quiet"
        assert simulators.parse_simulator_spec("builtin", suite="toy").name == "toy/builtin"
        # A suite without a manifest of that name keeps <suite>/builtin.
        assert simulators.default_simulator("backend-v1") == "backend-v1/builtin"
    finally:
        registry.simulators.unregister("toy/quiet")


def test_the_installed_suites_defaults_come_from_their_manifests():
    from colbench.simulators import default_simulator
    from colbench.suites import manifests

    for name, manifest in manifests().items():
        if manifest.default_simulator is not None:
            assert default_simulator(name) == manifest.default_simulator


@pytest.mark.parametrize("module, factory", [
    ("colbench.gyms.backend.simulator", "make_simulator"),
    ("colbench.gyms.backend.programs.simulator", "make_simulator"),
    ("colbench.gyms.frontend.designer", "make_designer"),
])
def test_a_suites_default_simulator_is_built_without_a_registry_look_up(module, factory,
                                                                       monkeypatch):
    import importlib

    from colbench.simulators import default_simulator

    make = getattr(importlib.import_module(module), factory)
    suite = "backend-v1" if ".programs." in module else module.split(".")[2]
    # The class the registry's default entry (the manifest's default_simulator) gives.
    expected = type(registry.simulators.get(default_simulator(suite))())
    asked: list[str] = []
    real_get = registry.simulators.get
    monkeypatch.setattr(registry.simulators, "get",
                        lambda name: asked.append(name) or real_get(name))
    for spec in (None, "", "  "):
        assert type(make(spec)) is expected
    assert asked == []
    # An explicit spec still goes through the registry, with the same grammar.
    assert type(make("builtin")) is expected
    assert asked == [default_simulator(suite)]

"""A spec read from a file is data (issue 21, item 1): ``colbench.data_specs`` decides, and
no reader runs code that a run directory, a data set or an upload names.

The readers' own tests: the viewer in ``tests/view/test_api.py``, the trainers (``train``
and ``collect``) in ``tests/trainers/test_data.py``, the leaderboard in
``tests/leaderboard/test_data_specs.py``; the report and the replay here.
"""

from __future__ import annotations

import logging

import pytest
from planted_code import BACKEND, backend_run, plant_code

from colbench import registry
from colbench.data_specs import env_kwargs_refusals, recorded_tasks, spec_refusal
from colbench.errors import ConfigError
from colbench.rundir import RunDir
from colbench.simulators import make_simulator


@pytest.mark.parametrize(("kind", "spec"), [
    ("model", "python:/tmp/x.py:reply"),
    ("model", "python:mymodule:reply"),
    ("model", "hf:org/name?trust_remote_code=true"),
    ("model", "vllm:org/name?trust_remote_code=1"),
    ("model", "hf:org/name?trust_remote_code=maybe"),  # unreadable: refused, not guessed
    ("model", "nosuchkind:x"),
    ("simulator", "python:/tmp/x.py:reply"),
    ("simulator", "model:python:/tmp/x.py:reply"),
    ("simulator", "mymodule:Simulator"),
    ("simulator", "pkg.sub:Simulator"),
    ("simulator", "model:hf:org/name?trust_remote_code=true"),
    ("simulator", "sweet-rl:python:/tmp/x.py:reply"),  # a registered name given code
    ("simulator", "backend/model:python:/tmp/x.py:reply"),
    ("simulator", "frontend/sweet-rl:model:python:/tmp/x.py:reply"),
    ("scorer", "clip:python:/tmp/x.py:reply"),
    ("scorer", "mymodule:Scorer"),
    ("env", "mymodule:Env"),
    ("value", "pkg.mod:Renderer"),
    ("value", "shared/run1/sim.py:X"),
    ("value", "python:/tmp/x.py:reply"),
])
def test_specs_that_name_code_are_refused(kind, spec):
    reason = spec_refusal(spec, kind)
    assert reason, (kind, spec)


@pytest.mark.parametrize(("kind", "spec"), [
    ("model", "openai:gpt-4o"),
    ("model", "openai:gpt-4o@http://localhost:8000/v1"),
    ("model", "hf:org/name"),
    ("model", "hf:./ckpt?trust_remote_code=false&dtype=float32"),
    ("model", "scripted:oracle"),
    ("simulator", None),
    ("simulator", "builtin"),
    ("simulator", "backend/builtin"),
    ("simulator", "model:openai:gpt-4o"),
    ("simulator", "openai:gpt-4o"),
    ("simulator", "challenge:http://localhost:5000/api/v1/challenges/x"),
    ("simulator", "sweet-rl:openai:gpt-4o"),
    ("scorer", "clip:/models/clip-vit-base-patch32"),
    ("scorer", "perceptual"),
    ("scorer", "perceptual-v1"),  # a recorded scorer's name, not a spec: a lookup at most
    ("env", BACKEND),
    ("env", "colbench/BabyAI-GoTo-v0"),
    ("value", "sweet-rl"),
    ("value", "challenge:spring"),
    ("value", "http://localhost:8080"),
    ("value", 3),
])
def test_registered_components_and_plain_data_are_accepted(kind, spec):
    assert spec_refusal(spec, kind) is None, (kind, spec)


def test_env_options_that_name_code_are_left_out_and_named():
    kept, refused = env_kwargs_refusals({
        "split": "test", "simulator": "python:/tmp/s.py:reply", "scorer": "perceptual",
        "extra": {"nested": ["ok", "pkg.mod:Thing"]}})
    assert kept == {"split": "test", "scorer": "perceptual"}
    assert [(item.where, item.spec) for item in refused] == [
        ("env_kwargs.simulator", "python:/tmp/s.py:reply"), ("env_kwargs.extra", "pkg.mod:Thing")]


def test_a_registered_name_with_an_argument_is_never_imported(tmp_path, monkeypatch):
    """``perceptual:x`` or another suite's ``sweet-rl:x`` pass the check as a registered
    name with an argument; a module of that name on sys.path must still not be imported."""
    for name in ("perceptual", "sweet-rl"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / (name + '.ran'))!r}, 'w').write('x')\nx = object\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="takes no argument"):
        registry.scorers.get("perceptual:x")
    with pytest.raises(ConfigError, match="no simulator of the backend suite"):
        make_simulator("sweet-rl:x", suite="backend")
    assert not list(tmp_path.glob("*.ran"))


def test_recorded_tasks_make_the_env_without_the_code(tmp_path):
    planted = plant_code(tmp_path / "shared")
    made = []

    def make(env_id, **kwargs):
        from colbench.envs import make as real_make

        made.append(kwargs)
        return real_make(env_id, **kwargs)

    tasks, line = recorded_tasks(BACKEND, {"split": "test", "simulator": planted.python_spec},
                                 origin="run.json", make=make)
    assert tasks and made == [{"split": "test"}] and not planted.ran()
    assert line.count("\n") == 0 and "run.json names code" in line
    assert planted.python_spec in line and f"{BACKEND} was made without it" in line
    none, line = recorded_tasks("planted_sim:Env", {}, origin="run.json", make=make)
    assert none is None and "no env was made" in line and len(made) == 1


@pytest.mark.parametrize("form", ["python", "module"])
def test_report_reads_a_run_naming_code_without_running_it(tmp_path, monkeypatch, caplog, form):
    """colbench report: the breakdown comes from the env made without the planted
    simulator, and one warning says what was left out."""
    from colbench.cli.main import main

    planted = plant_code(tmp_path / "shared")
    monkeypatch.syspath_prepend(str(planted.folder))
    spec = planted.python_spec if form == "python" else planted.class_spec
    run = backend_run(tmp_path / "run", {"simulator": spec})
    assert all(r.task_metadata is None for r in RunDir(run).latest_episodes())
    with caplog.at_level(logging.WARNING):
        assert main(["report", str(run), "--html", str(tmp_path / "report.html")]) == 0
    assert not planted.ran()
    said = [r.getMessage() for r in caplog.records if spec in r.getMessage()]
    assert len(said) == 1 and "names code" in said[0] and "made without it" in said[0]
    assert 'id="breakdowns"' in (tmp_path / "report.html").read_text()


def test_replay_says_which_recorded_specs_name_code(tmp_path):
    """A replay compares a run's simulator and scorer with its own; it never loads them, and
    run_problems names those that are code first."""
    from colbench.replay import RunFacts, find_replay, run_problems

    planted = plant_code(tmp_path / "shared")
    simulator = f"model:{planted.python_spec}"
    facts = RunFacts(env=BACKEND, split="test", simulator=simulator, scorer="mymod:Scorer")
    replay = find_replay(BACKEND)()
    problems = run_problems(replay, facts)
    assert "summary.json names code" in problems[0]
    assert simulator in problems[0] and "'mymod:Scorer'" in problems[0]
    assert problems[1:] == replay.run_problems(facts)
    honest = RunFacts(env=BACKEND, split="test", simulator="builtin", scorer=facts.scorer)
    assert RunFacts(env=BACKEND, simulator="builtin", scorer="perceptual").code_named() is None
    assert honest.code_named() is not None
    assert not planted.ran()


@pytest.mark.parametrize("same", [
    # Each group: spellings the simulators' grammar reads as one simulator and argument.
    ("model:gpt-4o", "backend/model:gpt-4o"),
    ("model:openai:gpt-4o", "backend/model:openai:gpt-4o", "openai:gpt-4o"),
    ("model:python:/tmp/x.py:reply", "backend/model:python:/tmp/x.py:reply",
     "python:/tmp/x.py:reply"),
])
def test_a_simulator_spec_is_judged_as_the_simulators_grammar_reads_it(same):
    # data_specs kept a second copy of the grammar, in which the suite's model kind with
    # its prefix took a value and without it a model spec: 'backend/model:gpt-4o' was
    # accepted and 'model:gpt-4o' refused, though both name the backend's model kind.
    from colbench.simulators import parse_simulator_spec

    read = {(parse_simulator_spec(spec, suite="backend").name,
             parse_simulator_spec(spec, suite="backend").argument) for spec in same}
    assert len(read) == 1, read
    verdicts = {spec: spec_refusal(spec, "simulator") is None for spec in same}
    assert len(set(verdicts.values())) == 1, verdicts

"""Third-party trainers through the ``colbench.trainers`` entry-point group, and input that
is refused before any training starts."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

from colbench import registry  # noqa: E402
from colbench.cli.main import main  # noqa: E402
from colbench.errors import ConfigError  # noqa: E402
from colbench.trainers import TrainerPlugin  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trainer_plugin"


@pytest.fixture
def on_path(monkeypatch):
    """Put folders on sys.path for one test; forget entry points and imports after."""
    added: list[str] = []

    def add(folder: Path) -> None:
        monkeypatch.syspath_prepend(str(folder))
        added.append(str(folder))
        importlib.invalidate_caches()
        registry.trainers.refresh_entry_points()

    yield add
    for name in list(registry.trainers._entries):
        if registry.trainers._entries[name].source != "builtin":
            registry.trainers.unregister(name)
    for module in [m for m in sys.modules if m.startswith("colbench_example_trainer")]:
        del sys.modules[module]
    monkeypatch.undo()
    importlib.invalidate_caches()
    registry.trainers.refresh_entry_points()


@pytest.mark.slow
def test_installed_plugin_is_listed_and_trains(on_path, tmp_path, guess_data, tiny_llama,
                                               capsys, fast_flags):
    site = tmp_path / "site"
    source = tmp_path / "source"  # pip builds in the source tree: build a copy
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    # A real install of the example distribution (its own pyproject and entry point), into a
    # folder of its own so that nothing outside the test sees it.
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(site), str(source)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert list(site.glob("colbench_example_trainer-*.dist-info"))
    on_path(site)

    assert main(["list", "trainers"]) == 0
    listing = capsys.readouterr().out
    line = next(row for row in listing.splitlines() if "best-of-k" in row)
    assert "colbench_example_trainer:BestOfKTrainer" in line
    assert "colbench-example-trainer" in line
    assert "rft" in listing and "sweet-rl" in listing

    out = tmp_path / "ckpt"
    assert main(["train", "best-of-k", "--model", f"hf:{tiny_llama}", "--data",
                 str(guess_data), "--out", str(out), "--min-score", "0.5", *fast_flags]) == 0
    assert "wrote a checkpoint" in capsys.readouterr().out
    record = json.loads((out / "colbench_train.json").read_text())
    assert "colbench-example-trainer" in record["trainer_source"]
    assert record["metrics"]["episodes"] == 6  # every task has an episode scoring >= 0.5
    from colbench.models import load_model

    model = load_model(f"hf:{out}?device=cpu&max_tokens=3")
    try:
        assert model.generate([[{"role": "user", "content": "Hello"}]])[0].completion_tokens
    finally:
        model.close()


def _fake_distribution(folder: Path, name: str, entry_points: str) -> None:
    dist = folder / f"{name}-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(entry_points)


def test_broken_plugin_warns_with_its_name_and_the_others_work(on_path, tmp_path, capsys):
    (tmp_path / "broken_trainer_pkg.py").write_text("raise RuntimeError('boom at import')\n")
    _fake_distribution(tmp_path, "broken-trainer-dist",
                       "[colbench.trainers]\nbroken-one = broken_trainer_pkg:Trainer\n")
    on_path(tmp_path)
    assert main(["list", "trainers"]) == 0
    out = capsys.readouterr().out
    assert "broken-one" in out and "BROKEN" in out
    assert "warning" in out and "'broken-one'" in out and "boom at import" in out
    for builtin in ("rft", "mt-dpo", "sweet-rl"):
        assert f"  {builtin} " in out or f"  {builtin}  " in out
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert main(["train", "broken-one", "--model", "hf:x", "--out", str(tmp_path / "o")]) == 2
    assert "unknown trainer 'broken-one'" in capsys.readouterr().err
    assert registry.trainers.get("rft").name == "rft"


# -- bad input is refused before training -------------------------------------------------


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if any built-in trainer reaches its train()."""
    from colbench.trainers.mt_dpo_trainer import MTDPOTrainer
    from colbench.trainers.rft_trainer import RFTTrainer
    from colbench.trainers.sweet_rl_trainer import SweetRLTrainer

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{self.name} started training on bad input")

    for cls in (RFTTrainer, MTDPOTrainer, SweetRLTrainer):
        monkeypatch.setattr(cls, "train", refuse)


def _train(name: str, model: str, data, out: Path, *extra: str) -> int:
    args = ["train", name, "--model", model, "--out", str(out), *extra]
    for folder in ([data] if not isinstance(data, list) else data):
        args += ["--data", str(folder)]
    return main(args)


@pytest.mark.parametrize("name", ["rft", "mt-dpo", "sweet-rl"])
def test_empty_data_is_refused(name, no_training, tmp_path, tiny_llama, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "episodes.jsonl").write_text("")
    assert _train(name, f"hf:{tiny_llama}", empty, tmp_path / "o") == 2
    assert "no finished episodes" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_data_from_another_env_is_refused(no_training, guess_data, tmp_path, tiny_llama,
                                          capsys):
    assert _train("rft", f"hf:{tiny_llama}", guess_data, tmp_path / "o", "--env",
                  "colbench/Backend-v0") == 2
    err = capsys.readouterr().err
    assert "collected on colbench-test/Guess-v0, not on colbench/Backend-v0" in err


def test_sweet_rl_without_successes_is_refused(no_training, guess_data, tmp_path, tiny_llama,
                                               capsys):
    failed = tmp_path / "failed"
    failed.mkdir()
    lines = [line for line in (guess_data / "episodes.jsonl").read_text().splitlines()
             if not json.loads(line)["metrics"].get("success")]
    assert lines
    (failed / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    (failed / "tasks.jsonl").write_text((guess_data / "tasks.jsonl").read_text())
    assert _train("sweet-rl", f"hf:{tiny_llama}", failed, tmp_path / "o") == 2
    assert "sweet-rl: no successful rollouts" in capsys.readouterr().err
    assert _train("rft", f"hf:{tiny_llama}", failed, tmp_path / "o") == 2
    assert "rft: no successful episodes" in capsys.readouterr().err


@pytest.mark.parametrize("spec, message", [
    ("hf:/no/such/model", "no model directory"),
    ("openai:gpt-4o", "has no weights a trainer can update"),
    ("scripted:oracle", "has no weights a trainer can update"),
    ("hf:{broken}", "cannot load model"),
    ("hf:{tiny}?temperature=1", "mean nothing to a trainer"),
])
def test_a_model_that_cannot_be_loaded_is_refused(spec, message, no_training, guess_data,
                                                  tmp_path, tiny_llama, capsys):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    spec = spec.format(broken=broken, tiny=tiny_llama)
    assert _train("mt-dpo", spec, guess_data, tmp_path / "o") == 2
    assert message in capsys.readouterr().err


def test_mt_dpo_without_pairs_and_a_full_out_folder_are_refused(no_training, guess_data,
                                                               tmp_path, tiny_llama, capsys):
    single = tmp_path / "single"
    single.mkdir()
    first = (guess_data / "episodes.jsonl").read_text().splitlines()[:1]
    (single / "episodes.jsonl").write_text(first[0] + "\n")
    assert _train("mt-dpo", f"hf:{tiny_llama}", single, tmp_path / "o") == 2
    assert "no preference pairs" in capsys.readouterr().err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "something").write_text("x")
    assert _train("rft", f"hf:{tiny_llama}", guess_data, busy) == 2
    assert "is not empty" in capsys.readouterr().err


def test_a_plugin_is_a_class_with_a_train_method(capsys):
    from colbench.trainers.base import resolve_trainer

    class Incomplete(TrainerPlugin):
        name = "incomplete"

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()
    registry.trainers.register("not-a-trainer", 42, source="test")
    try:
        with pytest.raises(ConfigError, match="not a trainer class"):
            resolve_trainer("not-a-trainer")
        assert main(["train", "not-a-trainer", "--model", "hf:x", "--out", "o"]) == 2
        assert "not a trainer class" in capsys.readouterr().err
    finally:
        registry.trainers.unregister("not-a-trainer")


PLAIN_PLUGIN = '''
from dataclasses import dataclass, field
from pathlib import Path

from colbench.trainers import TrainResult, episode_success


@dataclass
class CountConfig:
    label: str = field(default="n", metadata={"help": "what to call the count"})


class CountTrainer:
    """Not a TrainerPlugin subclass and no TRL: the protocol is name, config_class, train."""

    name = "count"
    config_class = CountConfig

    def __init__(self, config):
        self.config = config

    def train(self, model, data, out: Path):
        wins = sum(episode_success(e) for e in data.episodes)
        (out / "count.txt").write_text(f"{self.config.label}={wins} base={model.base}")
        return TrainResult(path=out, metrics={"successes": wins})
'''


def test_module_colon_class_works_in_place_of_a_name(on_path, tmp_path, guess_data, tiny_llama,
                                                     capsys):
    (tmp_path / "plain_trainer_mod.py").write_text(PLAIN_PLUGIN)
    on_path(tmp_path)
    out = tmp_path / "o"
    assert main(["train", "plain_trainer_mod:CountTrainer", "--model", f"hf:{tiny_llama}",
                 "--data", str(guess_data), "--out", str(out), "--label", "wins"]) == 0
    wins = sum(json.loads(line)["metrics"]["success"]
               for line in (guess_data / "episodes.jsonl").read_text().splitlines())
    assert (out / "count.txt").read_text() == f"wins={wins} base={tiny_llama}"
    record = json.loads((out / "colbench_train.json").read_text())
    assert record["trainer_source"] == "path plain_trainer_mod:CountTrainer"
    assert record["metrics"] == {"successes": wins}


def test_builtin_trainers_register_once_through_their_entry_points():
    """Importing the trainers registers none by decorator: each built-in trainer is declared
    once, by its ``colbench.trainers`` entry point, as a third-party trainer is."""
    import subprocess
    import sys

    code = ("import colbench.trainers; from colbench import registry; "
            "print(sorted(n for n in ('rft', 'mt-dpo', 'sweet-rl', 'online-grpo') "
            "if registry.trainers.is_registered(n)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
    from importlib import metadata

    declared = {ep.name for ep in metadata.entry_points(group="colbench.trainers")}
    assert {"rft", "mt-dpo", "sweet-rl", "online-grpo"} <= declared

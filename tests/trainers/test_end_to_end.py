"""collect -> train rft | mt-dpo | sweet-rl (full and LoRA) -> a checkpoint that ``hf:`` loads
and ``colbench evaluate`` runs, all through the command line, on a tiny random Llama."""

from __future__ import annotations

import json

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

import helpers_env  # noqa: E402

from colbench.cli.main import main  # noqa: E402
from colbench.rundir import RunDir, read_episodes  # noqa: E402


@pytest.fixture(scope="module")
def cli_data(tiny_llama, tmp_path_factory):
    """Collected by ``colbench collect`` from a pool: three scripted agents and the tiny model."""
    out = tmp_path_factory.mktemp("collected")
    rc = main(["collect", helpers_env.ENV_ID, "--model", "scripted:oracle", "--model",
               "scripted:no-ask", "--model", "scripted:asker", "--model", f"hf:{tiny_llama}",
               "--k", "3", "--num-tasks", "6", "--max-tokens", "6", "--out", str(out),
               "--no-progress"])
    assert rc == 0
    return out


def test_collect_pool_includes_the_hf_model(cli_data, tiny_llama):
    models = {r.model for r in read_episodes(cli_data)}
    assert f"hf:{tiny_llama}" in models and "scripted:oracle" in models


def _weights(path):
    from safetensors.torch import load_file

    return load_file(str(path))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rft", "mt-dpo", "sweet-rl"])
@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_collect_train_evaluate(name, lora, cli_data, tiny_llama, tmp_path, capsys, fast_flags,
                                sweet_fast_flags):
    out = tmp_path / "ckpt"
    args = ["train", name, "--model", f"hf:{tiny_llama}", "--data", str(cli_data), "--out",
            str(out), "--env", helpers_env.ENV_ID, *fast_flags]
    if name == "sweet-rl":
        args += sweet_fast_flags
    if name == "mt-dpo":  # settings from a YAML file, one overridden by a flag
        config = tmp_path / "mt-dpo.yaml"
        config.write_text("beta: 0.2\nnll_coef: 0.1\nmax_steps: 50\n")
        args += ["--config", str(config), "--max-steps", "2"]
    if lora:
        args += ["--lora", "--lora-r", "4", "--lora-alpha", "8"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert f"wrote a {'LoRA adapter' if lora else 'checkpoint'} to {out}" in printed

    card = (out / "README.md").read_text()
    assert f"colbench's `{name}` trainer" in card
    assert ("library_name: peft" if lora else "library_name: transformers") in card
    record = json.loads((out / "colbench_train.json").read_text())
    assert record["trainer"] == name and record["trainer_source"] == "builtin"
    assert record["env"] == helpers_env.ENV_ID
    if name == "mt-dpo":
        assert record["config"]["beta"] == 0.2 and record["config"]["max_steps"] == 2
    # The training curves colbench view draws, written without --save-steps too.
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] >= 1 and isinstance(state["log_history"], list)
    if lora:
        assert (out / "adapter_config.json").is_file() and not (out / "config.json").exists()
        trained = _weights(out / "adapter_model.safetensors")
        lora_b = [v for k, v in trained.items() if "lora_B" in k]
        assert lora_b and any(float(v.abs().max()) > 0 for v in lora_b)  # B starts at zero
    else:
        base, trained = _weights(tiny_llama / "model.safetensors"), _weights(
            out / "model.safetensors")
        assert any(not base[k].equal(trained[k]) for k in base)
    if name == "sweet-rl":
        assert (out / "critic" / "tokenizer_config.json").is_file()
        pairs = [json.loads(line) for line in (out / "actor_pairs.jsonl").read_text().splitlines()]
        assert pairs and all(p["chosen_advantage"] > p["rejected_advantage"] for p in pairs)

    runs = tmp_path / "eval"
    assert main(["evaluate", helpers_env.ENV_ID, "--model", f"hf:{out}?device=cpu",
                 "--num-tasks", "2", "--max-tokens", "4", "--out", str(runs),
                 "--no-progress"]) == 0
    summary = RunDir(runs).load_summary()
    assert summary.counts.ok == 2 and summary.model == f"hf:{out}?device=cpu"

"""``colbench train``: its flags and help come from the trainer's config fields; a missing or
misspelt trainer name is answered with the trainers there are."""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

from colbench.cli.main import main  # noqa: E402


def test_train_help_lists_the_trainers_settings(capsys):
    with pytest.raises(SystemExit) as done:
        main(["train", "sweet-rl", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--model", "--data", "--config", "--num-candidates", "--critic-epochs",
                 "--lora", "--no-lora", "--trl-args", "--nll-coef"):
        assert flag in text
    assert "candidate actions sampled per chosen turn (default: 16)" in " ".join(text.split())


def test_train_without_a_name_lists_trainers(capsys):
    assert main(["train"]) == 2
    err = capsys.readouterr().err
    assert "rft" in err and "mt-dpo" in err and "sweet-rl" in err


def test_unknown_trainer_suggests_the_close_name(capsys):
    assert main(["train", "sweet_rl", "--model", "hf:x", "--out", "o"]) == 2
    assert "did you mean 'sweet-rl'" in capsys.readouterr().err

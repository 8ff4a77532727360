"""``colbench models tiny`` and :mod:`colbench.models.tiny`: a tiny random chat model that
``hf:`` loads and generates from, the same files for the same seed, a chat template per
family, words added from ``--vocab``, and clear refusals of bad input that keep what is
already on disk."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from colbench.cli.main import main
from colbench.errors import ConfigError
from colbench.models import SamplingParams, load_model
from colbench.models.tiny import build_tiny_model, build_tiny_tokenizer, read_texts

pytest.importorskip("torch", reason="tiny models need torch (colbench[hf])")
pytest.importorskip("transformers", reason="tiny models need transformers (colbench[hf])")

CHAT = [{"role": "user", "content": "What should the function return ?"}]


def digests(folder: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.iterdir())}


@pytest.mark.parametrize("family, cue", [("llama", "<|assistant|>"),
                                         ("qwen2", "<|im_start|>assistant")])
def test_cli_writes_a_model_that_hf_loads_and_generates_from(tmp_path, capsys, family, cue):
    path = tmp_path / "tiny"
    assert main(["models", "tiny", str(path), "--family", family, "--layers", "1"]) == 0
    out = capsys.readouterr().out
    assert f"tiny random {family} (1 layer," in out and f"--model hf:{path}" in out
    model = load_model(f"hf:{path}?device=cpu")
    try:
        assert cue in model.render(CHAT)  # the family's chat template, not the fallback
        [reply] = model.generate([CHAT], SamplingParams(max_tokens=5, temperature=0.0))
        assert 0 < reply.completion_tokens <= 5
        assert model.model.config.num_hidden_layers == 1
    finally:
        model.close()


def test_the_same_seed_writes_the_same_files_and_another_seed_other_weights(tmp_path):
    first = digests(build_tiny_model(tmp_path / "a", seed=7))
    again = digests(build_tiny_model(tmp_path / "b", seed=7))
    other = digests(build_tiny_model(tmp_path / "c", seed=8))
    assert first == again
    assert other["model.safetensors"] != first["model.safetensors"]
    assert other["tokenizer.json"] == first["tokenizer.json"]  # the seed is the weights'


def test_tied_embeddings_give_every_word_its_embedding_as_output_row(tmp_path):
    from transformers import AutoModelForCausalLM

    tied = AutoModelForCausalLM.from_pretrained(
        build_tiny_model(tmp_path / "tied", tie_embeddings=True))
    untied = AutoModelForCausalLM.from_pretrained(build_tiny_model(tmp_path / "untied"))
    assert tied.config.tie_word_embeddings and not untied.config.tie_word_embeddings
    assert tied.lm_head.weight.data_ptr() == tied.model.embed_tokens.weight.data_ptr()
    assert not untied.lm_head.weight.equal(untied.model.embed_tokens.weight)


def test_vocab_files_add_their_words_to_the_word_level_tokenizer(tmp_path, capsys):
    words = tmp_path / "words.txt"
    words.write_text("fibonacci memoize\n\npalindrome\n", encoding="utf-8")
    assert main(["models", "tiny", str(tmp_path / "tiny"), "--vocab", str(words)]) == 0
    from transformers import AutoTokenizer

    plain = build_tiny_tokenizer(tmp_path / "plain")
    learned = AutoTokenizer.from_pretrained(str(tmp_path / "tiny"))
    for word in ("fibonacci", "memoize", "palindrome"):
        assert plain.convert_tokens_to_ids(word) == plain.unk_token_id
        assert learned.convert_tokens_to_ids(word) != learned.unk_token_id
    assert learned.decode(learned.encode("fibonacci memoize", add_special_tokens=False)) == \
        "fibonacci memoize"


def test_a_folder_that_is_not_empty_is_refused_and_kept(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert main(["models", "tiny", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "is not empty" in err and "--overwrite" in err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert (mine / "notes.txt").read_text() == "keep me"

    assert main(["models", "tiny", str(mine), "--overwrite"]) == 0
    assert (mine / "config.json").is_file() and (mine / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("args, message", [
    (["--layers", "0"], "at least 1 layer, got 0"),
    (["--hidden-size", "12"], "multiple of 8"),
    (["--vocab", "missing.txt"], "vocabulary file 'missing.txt' does not exist"),
])
def test_bad_arguments_name_what_was_wrong_and_write_nothing(tmp_path, capsys, monkeypatch,
                                                             args, message):
    monkeypatch.chdir(tmp_path)
    assert main(["models", "tiny", "out", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_unknown_family_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="unknown model family 'gpt2'.*llama, qwen2"):
        build_tiny_model(tmp_path / "x", family="gpt2")
    with pytest.raises(SystemExit):  # argparse's choices say it on the command line
        main(["models", "tiny", str(tmp_path / "y"), "--family", "gpt2"])


def test_read_texts_refuses_files_it_cannot_read_as_text(tmp_path):
    binary = tmp_path / "weights.bin"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match="'.*weights.bin' is not UTF-8 text"):
        read_texts([binary])
    with pytest.raises(ConfigError, match="is a directory"):
        read_texts([tmp_path])


def test_models_without_an_action_prints_its_usage(capsys):
    assert main(["models"]) == 2
    assert "tiny" in capsys.readouterr().err


def test_a_bare_relative_path_is_printed_as_a_local_spec(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["models", "tiny", "tiny", "--layers", "1"]) == 0
    assert "--model hf:./tiny" in capsys.readouterr().out

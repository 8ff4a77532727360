"""Tiny random chat models built in code, for trying colbench (and testing it) without the hub.

Real weights cannot be downloaded everywhere (CI, air-gapped machines), yet the ``hf:`` adapter
and the trainers need a real transformers model to run. :func:`build_tiny_model` makes one on
the spot: a tokenizer trained locally with ``tokenizers`` on a few sentences of a coding
dialogue (plus any texts the caller adds), with pad, eos and role tokens and a chat template,
and a causal LM of that vocabulary with random weights. It is saved with ``save_pretrained``,
so ``--model hf:PATH`` loads it and ``colbench train`` accepts it as a base model. It says
nonsense: it exists to run the pipeline, not to solve tasks.

Two families, because tokenizers differ in ways the trainers must handle:

- ``llama``: a word-level tokenizer (every whitespace-separated word a token, ``<unk>`` for
  the rest) with ``<s>``/``</s>`` and a ``<|role|>`` chat template, on a Llama;
- ``qwen2``: a byte-level BPE tokenizer whose tokens span word boundaries and whitespace, with
  ChatML (``<|im_start|>``/``<|im_end|>``) as Qwen2 renders chats, on a Qwen2.

Everything is deterministic for a seed: the same arguments write the same files.

Building needs ``colbench[hf]`` (torch and transformers, which bring ``tokenizers``); this
module imports them only when a builder runs, so importing it stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError, MissingExtraError

#: The model families :func:`build_tiny_model` builds.
FAMILIES = ("llama", "qwen2")

#: Text the tokenizers learn their vocabulary from: words a coding dialogue uses.
CORPUS = [
    "Hello , how can I help you write this function ?",
    "What should the function return when the list is empty ?",
    "It should return zero . The threshold is ten and the ratio is half .",
    "def solve ( x ) : return x + 1",
    "I WANT TO ANSWER : def f ( a , b ) : return a * b",
    "Please round the result to two decimals and sort by name .",
    "Yes no maybe the user system assistant said asked answered",
    "0 1 2 3 4 5 6 7 8 9 10 100 = < > ( ) [ ] { } : , . ? ! ' \"",
]

#: The word-level tokenizer's special tokens, in id order (``<pad>`` is id 0).
WORD_SPECIAL_TOKENS = ["<pad>", "<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>",
                       "<|system|>"]

#: The ``llama`` family's chat template: one block per message ending with ``</s>``, then the
#: assistant cue.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|> {{ message['content'] }} {{ eos_token }} "
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)

#: The ``qwen2`` family's chat template: ChatML, as Qwen2 renders chats (with its default
#: system message).
CHATML_TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

#: The byte-level BPE vocabulary's size (special tokens, the 256 bytes and merges).
BPE_VOCAB_SIZE = 400

#: At most this many words enter a word-level vocabulary (the most frequent first), so that a
#: large ``texts`` file cannot blow the embedding matrix up.
MAX_WORDS = 32_000

#: The context the models claim. Multi-turn episodes run past a few hundred tokens, and rotary
#: positions have no learned table, so a long claim costs nothing and spares a warning per call.
MAX_POSITIONS = 4096

#: Marks "the family's own chat template" where ``None`` means "no template".
FAMILY_TEMPLATE = "family"


def _require_hf(part: str) -> None:
    """Import what building needs, or raise the one-line install hint naming ``part``."""
    try:
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(part, "hf", exc.name) from exc


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ConfigError(f"unknown model family {family!r}: choose one of "
                          f"{', '.join(FAMILIES)}")


def read_texts(paths: Iterable[str | Path]) -> list[str]:
    """The lines of each text file in ``paths``, for ``texts=`` of the builders; a file that
    is missing, a directory or not UTF-8 raises :class:`ConfigError` naming it."""
    lines: list[str] = []
    for path in map(Path, paths):
        try:
            lines.extend(path.read_text(encoding="utf-8").splitlines())
        except FileNotFoundError:
            raise ConfigError(f"vocabulary file {str(path)!r} does not exist") from None
        except IsADirectoryError:
            raise ConfigError(f"vocabulary file {str(path)!r} is a directory, not a text "
                              "file") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"vocabulary file {str(path)!r} is not UTF-8 text "
                              f"({exc.reason} at byte {exc.start})") from None
    return [line for line in lines if line.strip()]


def build_tiny_tokenizer(path: str | Path, *, family: str = "llama",
                         chat_template: str | None = FAMILY_TEMPLATE,
                         texts: Sequence[str] = ()) -> Any:
    """Train the ``family``'s tokenizer on :data:`CORPUS` and ``texts``, save it (fast format)
    to ``path`` and return it (a ``PreTrainedTokenizerFast``).

    ``chat_template`` is the family's own by default; ``None`` saves a tokenizer without one
    (as a base model's), any other string is used as the template.
    """
    _check_family(family)
    _require_hf("colbench's tiny models")
    if family == "llama":
        tokenizer = _word_level_tokenizer(list(CORPUS) + list(texts))
        own_template = CHAT_TEMPLATE
    else:
        tokenizer = _byte_level_bpe_tokenizer(list(CORPUS) + list(texts))
        own_template = CHATML_TEMPLATE
    template = own_template if chat_template == FAMILY_TEMPLATE else chat_template
    if template is not None:
        tokenizer.chat_template = template
    Path(path).mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(path))
    return tokenizer


def _word_level_tokenizer(corpus: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.train_from_iterator(corpus, trainers.WordLevelTrainer(
        vocab_size=MAX_WORDS + len(WORD_SPECIAL_TOKENS), special_tokens=WORD_SPECIAL_TOKENS,
        show_progress=False))
    raw.decoder = decoders.WordPiece(prefix="##")  # joins the words with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
        eos_token="</s>", additional_special_tokens=["<|user|>", "<|assistant|>", "<|system|>"])


def _byte_level_bpe_tokenizer(corpus: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    # Repeated so that pairs across the few sentences are frequent enough to merge.
    raw.train_from_iterator(corpus * 4, trainers.BpeTrainer(
        vocab_size=BPE_VOCAB_SIZE, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    return PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<|endoftext|>", eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"])


def build_tiny_model(path: str | Path, *, family: str = "llama", seed: int = 0,
                     layers: int = 2, hidden_size: int = 32, texts: Sequence[str] = (),
                     chat_template: str | None = FAMILY_TEMPLATE,
                     tie_embeddings: bool = False, overwrite: bool = False) -> Path:
    """Save a random ``family`` model of ``layers`` layers and its tokenizer to ``path``;
    return the path.

    The model is float32 and small (well under a megabyte with the defaults), so it loads and
    generates on a CPU in milliseconds. ``texts`` adds words (``llama``) or shapes merges
    (``qwen2``) of the tokenizer; ``chat_template`` is as in :func:`build_tiny_tokenizer`.
    ``tie_embeddings`` shares the input embedding with the output layer: a word the model
    never had to write then still has an output row, its own embedding, so a model trained
    to copy words from its prompt can copy words it was never trained on.
    With ``overwrite=False`` a ``path`` that holds anything is refused, so that nothing
    already there is replaced.
    """
    _check_family(family)
    if layers < 1:
        raise ConfigError(f"a tiny model needs at least 1 layer, got {layers}")
    # 4 attention heads of 2 key-value groups: the width must split into them.
    if hidden_size < 8 or hidden_size % 8:
        raise ConfigError(f"hidden size must be a positive multiple of 8 (4 attention heads "
                          f"of even width), got {hidden_size}")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{str(path)!r} is a file, not a folder for a model")
    if not overwrite and path.is_dir() and any(path.iterdir()):
        raise ConfigError(f"{str(path)!r} is not empty; choose a new folder, or overwrite "
                          "on purpose (--overwrite) to replace the files of the same names")
    _require_hf("colbench's tiny models")
    import torch
    from transformers import GenerationConfig

    tokenizer = build_tiny_tokenizer(path, family=family, chat_template=chat_template,
                                     texts=texts)
    config_class, model_class = _architecture(family)
    shape = dict(vocab_size=len(tokenizer), hidden_size=hidden_size,
                 intermediate_size=2 * hidden_size, num_hidden_layers=layers,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=MAX_POSITIONS,
                 tie_word_embeddings=tie_embeddings)
    special = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    if tokenizer.bos_token_id is not None:
        special["bos_token_id"] = tokenizer.bos_token_id
    torch.manual_seed(seed)
    model = model_class(config_class(**shape, **special)).to(torch.float32)
    model.generation_config = GenerationConfig(**special)
    _save_quietly(model, path)
    return path


def _save_quietly(model: Any, path: Path) -> None:
    """``save_pretrained`` without transformers' "Writing model shards" bar: one shard of a
    few kilobytes takes no time, and the bar's frames would only clutter logs."""
    from transformers.utils import logging as transformers_logging

    was_enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        model.save_pretrained(str(path))
    finally:
        if was_enabled:
            transformers_logging.enable_progress_bar()


def _architecture(family: str) -> tuple[Any, Any]:
    """The config and model classes of ``family``."""
    import transformers

    if family == "llama":
        return transformers.LlamaConfig, transformers.LlamaForCausalLM
    return transformers.Qwen2Config, transformers.Qwen2ForCausalLM

"""Tiny random causal language models built on the spot, for tests that need a real model.

No weights can be downloaded in the test environment, so tests that exercise transformers,
PEFT or TRL build a model here: a word-level tokenizer trained with ``tokenizers`` on a few
sentences (with pad, eos, bos and unk tokens and a chat template) and a two-layer Llama with
random weights. Everything is deterministic for a given ``seed``.

Usage from any test module::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests/ folder
    from tiny_models import build_tiny_llama
    path = build_tiny_llama(tmp_path / "tiny")
    model = load_model(f"hf:{path}")
"""

from __future__ import annotations

from pathlib import Path

#: Text the tokenizer learns its vocabulary from: words a coding dialogue uses.
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

SPECIAL_TOKENS = ["<pad>", "<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"]

#: A minimal chat template: one block per message ending with ``</s>``, then the assistant cue.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|> {{ message['content'] }} {{ eos_token }} "
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def build_tiny_tokenizer(path: str | Path, chat_template: str | None = CHAT_TEMPLATE):
    """Train a word-level tokenizer on :data:`CORPUS` and save it (fast format) to ``path``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS))
    from tokenizers import decoders

    raw.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
        eos_token="</s>", additional_special_tokens=["<|user|>", "<|assistant|>", "<|system|>"],
    )
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    Path(path).mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(path))
    return tokenizer


def build_tiny_llama(path: str | Path, *, seed: int = 0, hidden_size: int = 32,
                     num_layers: int = 2, chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """Save a random two-layer Llama and its tokenizer to ``path``; return the path.

    The model is float32 and small enough (well under a megabyte) to load and generate from
    on a CPU in milliseconds. ``chat_template=None`` saves a tokenizer without a template.
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    path = Path(path)
    tokenizer = build_tiny_tokenizer(path, chat_template=chat_template)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id)
    model.save_pretrained(str(path))
    return path


#: ChatML, as the Qwen2 family renders chats (with its default system message).
CHATML_TEMPLATE = (
    "{% if messages[0]['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_bpe_tokenizer(path: str | Path, chat_template: str = CHATML_TEMPLATE):
    """A byte-level BPE tokenizer with ChatML special tokens (as Qwen2's), trained on
    :data:`CORPUS`, saved to ``path``. Unlike the word-level one, its tokens can span word
    boundaries and whitespace, as real BPE vocabularies do."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        CORPUS * 4, trainers.BpeTrainer(vocab_size=400, special_tokens=special,
                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<|endoftext|>", eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"])
    tokenizer.chat_template = chat_template
    Path(path).mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(path))
    return tokenizer


def build_tiny_qwen2(path: str | Path, *, seed: int = 0, hidden_size: int = 32,
                     num_layers: int = 2) -> Path:
    """Save a random two-layer Qwen2 with a byte-level BPE tokenizer and ChatML template."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    path = Path(path)
    tokenizer = build_tiny_bpe_tokenizer(path)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(pad_token_id=tokenizer.pad_token_id,
                                               eos_token_id=tokenizer.eos_token_id)
    model.save_pretrained(str(path))
    return path

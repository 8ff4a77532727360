"""Per-turn masks cover exactly the agent's tokens of each turn, under the chat templates of two
model families (a word-level Llama and a byte-level BPE Qwen2 with ChatML), and each turn's
context is exactly the prompt the agent was given at inference."""

from __future__ import annotations

import pytest

for _module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
    pytest.importorskip(_module, reason="the trainers need colbench[train]")

from colbench.errors import ConfigError  # noqa: E402
from colbench.trainers.tokenize import (  # noqa: E402
    render,
    tokenize_continuation,
    tokenize_conversation,
    tokenize_prompt,
)

CONVERSATION = [
    {"role": "system", "content": "Please round the result to two decimals ."},
    {"role": "user", "content": "Hello , how can I help you write this function ?"},
    {"role": "assistant", "content": "What should the function return when the list is empty ?"},
    {"role": "user", "content": "It should return zero . The threshold is ten ."},
    {"role": "assistant", "content": "is the ratio half ?"},
    {"role": "user", "content": "Yes"},
    {"role": "assistant", "content": "I WANT TO ANSWER : def f ( a , b ) : return a * b"},
]
ACTIONS = [m["content"] for m in CONVERSATION if m["role"] == "assistant"]
ASSISTANT_AT = [i for i, m in enumerate(CONVERSATION) if m["role"] == "assistant"]


@pytest.fixture(params=["llama", "qwen2"])
def family(request, tiny_llama, tiny_qwen2):
    """``(tokenizer, end-of-turn token id)`` of each family."""
    from transformers import AutoTokenizer

    if request.param == "llama":
        tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
        return tokenizer, tokenizer.eos_token_id  # its template ends a turn with </s>
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen2)
    return tokenizer, tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_each_turn_mask_is_exactly_that_actions_tokens_and_end_marker(family):
    tokenizer, end_id = family
    tokenized = tokenize_conversation(tokenizer, CONVERSATION)
    assert len(tokenized.input_ids) == len(tokenized.turn_index)
    assert tokenized.num_turns == len(ACTIONS)
    for turn, action in enumerate(ACTIONS):
        expected = tokenizer(action, add_special_tokens=False)["input_ids"] + [end_id]
        positions = [p for p, t in enumerate(tokenized.turn_index) if t == turn]
        assert [tokenized.input_ids[p] for p in positions] == expected
        assert positions == list(range(positions[0], positions[0] + len(expected)))  # contiguous
        assert tokenized.mask(turn) == [int(t == turn) for t in tokenized.turn_index]
    # Nothing else is the agent's: observations, the system prompt, role headers.
    assert sum(tokenized.mask()) == sum(
        len(tokenizer(a, add_special_tokens=False)["input_ids"]) + 1 for a in ACTIONS)


def test_each_turn_context_is_the_prompt_the_agent_was_given(family):
    tokenizer, _ = family
    tokenized = tokenize_conversation(tokenizer, CONVERSATION)
    for turn, index in enumerate(ASSISTANT_AT):
        start = tokenized.turn_index.index(turn)
        assert tokenized.input_ids[:start] == tokenize_prompt(tokenizer, CONVERSATION[:index])
    # and the whole sequence decodes to the rendered conversation
    full = render(tokenizer, CONVERSATION, add_generation_prompt=False)
    assert tokenizer.decode(tokenized.input_ids).replace(" ", "") == full.replace(" ", "")


def test_continuation_after_earlier_turns_starts_at_the_new_turn(family):
    tokenizer, end_id = family
    history = CONVERSATION[:ASSISTANT_AT[-1]]  # two earlier agent turns, then an observation
    candidate = [{"role": "assistant", "content": "is the ratio half ?"}]
    prompt_ids, completion_ids, turns = tokenize_continuation(tokenizer, history, candidate)
    assert prompt_ids == tokenize_prompt(tokenizer, history)
    assert completion_ids == tokenizer("is the ratio half ?",
                                       add_special_tokens=False)["input_ids"] + [end_id]
    assert turns == [0] * len(completion_ids)


def test_tokenizer_without_template_uses_the_hf_adapters_fallback(tmp_path):
    from colbench.models.hf import FALLBACK_CHAT_TEMPLATE
    from colbench.models.tiny import build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer(tmp_path, chat_template=None)
    text = render(tokenizer, CONVERSATION[:2], add_generation_prompt=True)
    assert text == tokenizer.apply_chat_template(CONVERSATION[:2], tokenize=False,
                                                 add_generation_prompt=True,
                                                 chat_template=FALLBACK_CHAT_TEMPLATE)
    tokenized = tokenize_conversation(tokenizer, CONVERSATION)
    assert tokenized.turn_ids(2)[-1] == tokenizer.eos_token_id


def test_template_that_rewrites_earlier_turns_is_refused(tiny_llama):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    # Shows only the last assistant message in full, as templates that drop earlier
    # reasoning do: a turn's text changes once the conversation goes on.
    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|> "
        "{% if m['role'] == 'assistant' and not loop.last %}...{% else %}{{ m['content'] }}"
        "{% endif %} {{ eos_token }} {% endfor %}"
        "{% if add_generation_prompt %}<|assistant|> {% endif %}")
    with pytest.raises(ConfigError, match="renders a conversation's beginning differently"):
        tokenize_conversation(tokenizer, CONVERSATION)


def test_malformed_messages_are_named():
    with pytest.raises(ConfigError, match="message 1"):
        tokenize_conversation(object(), [{"role": "user", "content": "x"}, {"text": "y"}])

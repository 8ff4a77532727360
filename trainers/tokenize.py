"""Conversations as token ids, with the agent's tokens of every turn marked.

Multi-turn training puts a loss on the agent's tokens only, and per turn (SWEET-RL's critic
averages over each turn's action tokens). :func:`tokenize_conversation` renders a conversation
with the tokenizer's chat template and returns its ids with ``turn_index``: for every token,
the number of the agent turn it belongs to (0, 1, ...), or -1 for everything else (system
prompt, observations, the template's role headers).

How the spans are found: for each assistant message *i*, the conversation up to *i* is rendered
with the generation prompt (exactly the prompt the agent was given at that turn) and the
conversation through *i* without it. The text between the two is the agent's turn: its content
and the template's end-of-turn marker (``</s>``, ``<|im_end|>``, ``<|eot_id|>``), which the
model must learn to emit to stop; whitespace the template puts after the marker is not the
agent's. Each piece is tokenized on its own and the pieces are concatenated, so each turn's
tokens are exactly the ones the model produced after its prompt at inference. A template that
renders a conversation's beginning differently once more messages follow (some drop earlier
reasoning) cannot be split this way, and is refused with an error that says so.

A tokenizer without a chat template gets the ``hf:`` adapter's fallback template, so training
renders conversations the way ``colbench evaluate`` with ``hf:`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from colbench.errors import ConfigError

Message = dict[str, str]


@dataclass
class TokenizedConversation:
    """Token ids of a conversation and, per token, its agent turn (-1: not the agent's)."""

    input_ids: list[int]
    turn_index: list[int]

    @property
    def num_turns(self) -> int:
        return max(self.turn_index, default=-1) + 1

    @property
    def prompt_length(self) -> int:
        """Tokens before the first agent token (the prompt shared by every continuation)."""
        for position, turn in enumerate(self.turn_index):
            if turn >= 0:
                return position
        return len(self.input_ids)

    def mask(self, turn: int | None = None) -> list[int]:
        """1 on the agent's tokens (of ``turn`` only, if given), else 0."""
        if turn is None:
            return [1 if t >= 0 else 0 for t in self.turn_index]
        return [1 if t == turn else 0 for t in self.turn_index]

    def turn_ids(self, turn: int) -> list[int]:
        return [i for i, t in zip(self.input_ids, self.turn_index, strict=True) if t == turn]


def chat_template_of(tokenizer: Any) -> str | None:
    """The template to render with: the tokenizer's own, or the ``hf:`` adapter's fallback."""
    if getattr(tokenizer, "chat_template", None):
        return None
    from colbench.models.hf import FALLBACK_CHAT_TEMPLATE

    return FALLBACK_CHAT_TEMPLATE


def render(tokenizer: Any, messages: Sequence[Message], *, add_generation_prompt: bool,
           chat_template: str | None = None) -> str:
    template = chat_template if chat_template is not None else chat_template_of(tokenizer)
    return tokenizer.apply_chat_template([dict(m) for m in messages], tokenize=False,
                                         add_generation_prompt=add_generation_prompt,
                                         chat_template=template)


def _encode(tokenizer: Any, text: str) -> list[int]:
    if not text:
        return []
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def agent_spans(tokenizer: Any, messages: Sequence[Message], *,
                chat_template: str | None = None) -> tuple[str, list[tuple[int, int]]]:
    """The rendered conversation and the character span of each agent turn in it."""
    assistant_at = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    full = render(tokenizer, messages, add_generation_prompt=False, chat_template=chat_template)
    spans = []
    previous_end = 0
    for i in assistant_at:
        before = render(tokenizer, messages[:i], add_generation_prompt=True,
                        chat_template=chat_template)
        through = render(tokenizer, messages[:i + 1], add_generation_prompt=False,
                         chat_template=chat_template)
        if not (through.startswith(before) and full.startswith(through)):
            raise ConfigError(
                "the chat template renders a conversation's beginning differently once more "
                f"messages follow (at message {i}), so the agent's turns cannot be located in "
                "one sequence; train with a template that renders earlier turns unchanged")
        start = len(before)
        end = start + len(through[start:].rstrip())
        if start < previous_end or end <= start:
            raise ConfigError(f"the chat template gave agent turn {len(spans)} (message {i}) "
                              "an empty or overlapping span")
        spans.append((start, end))
        previous_end = end
    return full, spans


def tokenize_conversation(tokenizer: Any, messages: Sequence[Message], *,
                          chat_template: str | None = None) -> TokenizedConversation:
    """Token ids of ``messages`` with each token's agent turn (see the module docs)."""
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise ConfigError(f"message {index} is not a chat message with role and content: "
                              f"{message!r}")
    full, spans = agent_spans(tokenizer, messages, chat_template=chat_template)
    ids: list[int] = []
    turns: list[int] = []
    cursor = 0
    for turn, (start, end) in enumerate(spans):
        context = _encode(tokenizer, full[cursor:start])
        action = _encode(tokenizer, full[start:end])
        ids += context + action
        turns += [-1] * len(context) + [turn] * len(action)
        cursor = end
    tail = _encode(tokenizer, full[cursor:])
    ids += tail
    turns += [-1] * len(tail)
    return TokenizedConversation(ids, turns)


def tokenize_prompt(tokenizer: Any, messages: Sequence[Message], *,
                    chat_template: str | None = None) -> list[int]:
    """The ids of the prompt the agent gets for its next turn (with the generation prompt)."""
    return _encode(tokenizer, render(tokenizer, messages, add_generation_prompt=True,
                                     chat_template=chat_template))


def tokenize_prompt_as_sampled(tokenizer: Any, messages: Sequence[Message],
                               sampled: Sequence[Sequence[int] | None], *,
                               chat_template: str | None = None) -> list[int]:
    """The ids of the prompt for the agent's next turn with each earlier agent turn as the
    ids it was sampled as (token in, token out), not as its text re-encoded.

    The text between agent turns is encoded piece by piece, as
    :func:`tokenize_conversation` does, so the prompt is the training sequence's prefix token
    for token. ``sampled`` has one entry per agent message of ``messages`` (None: the turn's
    ids are unknown, its text is encoded). A turn sampled without the end marker (cut at
    ``max_tokens``) gets the marker the template adds after it, as the training sequence
    does.

    Parameters
    ----------
    tokenizer:
        The policy's tokenizer.
    messages:
        The conversation so far, ending before the agent's next turn.
    sampled:
        Per agent message, the token ids the policy generated for it, or None.
    chat_template:
        A template to render with instead of the tokenizer's own.
    """
    full, spans = agent_spans(tokenizer, messages, chat_template=chat_template)
    if len(sampled) != len(spans):
        raise ValueError(f"{len(sampled)} sampled turns for {len(spans)} agent messages")
    prompt = render(tokenizer, messages, add_generation_prompt=True, chat_template=chat_template)
    if not prompt.startswith(full):
        raise ConfigError("the chat template renders a conversation differently once the "
                          "generation cue follows, so its agent turns cannot be kept as sampled")
    ids: list[int] = []
    cursor = 0
    for (start, end), generated in zip(spans, sampled, strict=True):
        ids += _encode(tokenizer, prompt[cursor:start])
        span = _encode(tokenizer, prompt[start:end])
        if not generated or list(generated) == span:
            ids += span
        else:
            ids += generated
            if span and span[-1] != generated[-1]:
                ids += span[-1:]
        cursor = end
    return ids + _encode(tokenizer, prompt[cursor:])


def tokenize_continuation(tokenizer: Any, prompt: Sequence[Message],
                          continuation: Sequence[Message], *,
                          chat_template: str | None = None,
                          ) -> tuple[list[int], list[int], list[int]]:
    """``(prompt_ids, completion_ids, completion_turns)`` for ``prompt + continuation``, split
    where the first agent turn of ``continuation`` starts (``prompt`` may hold earlier agent
    turns: they are context); the completion ends with the last agent token.
    ``completion_turns`` marks the agent's tokens with their turn number, counted from the
    first turn of ``continuation``, and -1 elsewhere (observations between turns)."""
    earlier = sum(1 for m in prompt if m.get("role") == "assistant")
    tokenized = tokenize_conversation(tokenizer, [*prompt, *continuation],
                                      chat_template=chat_template)
    if tokenized.num_turns <= earlier:
        raise ConfigError("a continuation without any agent turn has nothing to train on")
    cut = tokenized.turn_index.index(earlier)
    # Template text after the last agent token (a newline after the end marker) is never
    # predicted with a loss: it is left out of the completion.
    end = max(p for p, t in enumerate(tokenized.turn_index) if t >= 0) + 1
    turns = [t - earlier if t >= earlier else -1 for t in tokenized.turn_index[cut:end]]
    return tokenized.input_ids[:cut], tokenized.input_ids[cut:end], turns

"""ColBench Frontend under ``--protocol sweet-rl``: the released SWEET-RL harness's designer.

The published frontend numbers (SWEET-RL's paper) were measured with the harness released
with it (``facebookresearch/sweet_rl``: ``sweet_rl/environments/
human_design_interaction_env.py``). Its simulated designer is a vision-language model that
sees only two pictures; colbench's built-in designer reads both pages' DOMs and names exact
texts, colours and sizes, and its model-backed one also reads the dialogue, so both help the
agent more than the paper's designer did. This module restates the harness's designer:

* **What it sees.** One user message, no system message and no dialogue, no task
  description: our instruction (play the person, compare the two pictures, the most visible
  differences first, concretely), then the agent's render of the page in *this* message,
  then the target's render. When this message holds no page (or its page did not render),
  the agent's picture is replaced by a sentence saying there is none: a page sent earlier
  is not shown again, as in the harness.
* **Its cut.** The model's text, cut to its first 1,000 characters, nothing else removed
  (the harness keeps whatever the model wrote, code included). Sampling: temperature 0, up
  to 4,096 new tokens.
* **Needs a vision model.** ``--simulator`` must name a model that accepts images (an
  ``openai:`` endpoint serving a vision model, e.g. vLLM or a hosted API); without one the
  protocol refuses at start, naming the flag. The ``hf:`` adapter is text-only and is refused.
* **Scores.** As in the harness and colbench's own protocol: the CLIP ViT-B/32 cosine of
  the last rendered page against the target (a black picture when there is none). The paper
  leads with the win rate against a reference model (per task, the higher similarity wins):
  it compares two runs, so ``colbench compare RUN RUN_REF`` computes it, and the
  leaderboard's sweet-rl board shows it against the reference entry its operator names. Its
  second figure is the mean similarity, which the summary reports as ``score``. ``success``
  (score at least ``success_threshold``) stays recorded, but it is colbench's threshold, not
  the paper's.

Where colbench differs, and why: the agent's page is read from its message the colbench way
(the last fenced or ``<html>`` page; the harness takes the first ``<html>...</html>`` or
``<body>...</body>`` and rewrites picture URLs to one fixed picture) and ``OUTPUT:`` is not
cut, so that the leaderboard's replay, which re-renders the last page by colbench's rules,
verifies these runs too; a request the model's server rejects is an error of the
environment, where the harness answers "No response." and goes on; renders are Chromium's
(the harness used Firefox).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from colbench import registry
from colbench.errors import ConfigError
from colbench.models.base import SamplingParams
from colbench.simulators import ModelBackedSimulator, make_simulator
from colbench.tasks import Task

PROTOCOL = "sweet-rl"
#: The harness's cut of the designer's reply.
MAX_REPLY_CHARS = 1000
#: How the harness samples its designer.
SAMPLING = SamplingParams(temperature=0.0, max_tokens=4096)
#: The registered name of the harness designer (``frontend/sweet-rl``).
NAME = "sweet-rl"
_NAME_PREFIX = f"{NAME}:"
_MODEL_PREFIX = "model:"

INSTRUCTION = """\
Play a person who is working with an AI assistant on the design of a web page. You know \
exactly which page you want, and your aim is to lead the assistant to build that page and \
no other. You get two pictures: the first is the page the assistant made, the second is the \
page you want. Say briefly how the assistant's page differs from yours. Start with the \
differences that stand out most, and be concrete about each part (for example: the picture \
should be bigger, the heading should be centred)."""
AGENT_PICTURE = "This is the page the assistant made."
NO_AGENT_PICTURE = "The assistant has not shown a page this time."
TARGET_PICTURE = "This is the page you want."

SYSTEM_PROMPT = """You help a person build a complete, well-designed web page in HTML with \
Tailwind CSS; write the page inside an <html> tag, with real, full sentences about the \
business. Pictures are optional; if you use any, take them only from \
https://picsum.photos/id/48/W/H with W and H the picture's width and height. The person has \
one particular page in mind, so expect several rounds of revision: put exactly one HTML page \
in a message, and the person will see its screenshot and say how it differs from the page \
they want. They see only the screenshot, not your words or questions. Make the page match \
theirs in layout, navigation, colours and everything else. You have at most {max_turns} \
messages, and you are judged on the final page and on how few rounds you need. When you are \
done, begin a message with "{marker}"."""


def _picture(png: bytes) -> dict[str, Any]:
    """An image content part (OpenAI chat format) holding the render as it is."""
    data = base64.b64encode(png).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


class HarnessDesigner(ModelBackedSimulator):
    """The harness's designer: a vision model shown the two pictures only (module docstring).

    Named ``sweet-rl:SPEC``.

    Parameters
    ----------
    model : ChatModel or str
        A chat model that accepts images, or its spec.
    """

    def __init__(self, model: Any) -> None:
        super().__init__(model, max_chars=MAX_REPLY_CHARS, params=SAMPLING)
        self.name = f"{_NAME_PREFIX}{self.spec}"
        if getattr(self.model, "accepts_images", True) is False:
            self.close()
            raise ConfigError(f"--protocol {PROTOCOL}: the designer's model {self.spec!r} "
                              "does not accept images; name a vision model served behind an "
                              "OpenAI-compatible endpoint (--simulator openai:MODEL@URL)")

    def messages(self, answer: Any | None, target: Any) -> list[dict[str, Any]]:
        """What the model is sent: one user message with our instruction and the two
        pictures (the agent's, or a sentence when this message had none; then the target)."""
        if target is None or target.png is None:
            raise ConfigError("the target page has no render to show the designer")
        parts: list[dict[str, Any]] = [{"type": "text", "text": INSTRUCTION}]
        if answer is not None and answer.png is not None:
            parts += [{"type": "text", "text": AGENT_PICTURE}, _picture(answer.png)]
        else:
            parts.append({"type": "text", "text": NO_AGENT_PICTURE})
        parts += [{"type": "text", "text": TARGET_PICTURE}, _picture(target.png)]
        return [{"role": "user", "content": parts}]

    def reply(self, task: Task, dialogue: Sequence[dict[str, Any]], message: str, *,
              target: Any, answer: Any | None) -> str:
        """The model's text cut to 1,000 characters. ``task``, ``dialogue`` and ``message``
        are not shown to the model: the harness's designer sees the pictures only."""
        completion = self.model.generate([self.messages(answer, target)], self.params)[0]
        return (completion.text or "")[:MAX_REPLY_CHARS]


def make_harness_designer(spec: Any, suite: str) -> Any:
    """The designer of the sweet-rl protocol from ``--simulator``'s ``spec``: a model spec
    (``openai:MODEL@URL``, also written ``model:SPEC`` or ``sweet-rl:SPEC``) gives a
    :class:`HarnessDesigner`; an object with ``reply`` is used as it is (a replay's recorded
    replies). No spec, ``builtin`` or a designer of another kind is a ConfigError naming the
    flag: this protocol's designer is a vision model or nothing."""
    if spec is not None and not isinstance(spec, str):
        return make_simulator(spec, suite=suite)
    text = (spec or "").strip()
    if text.startswith(_MODEL_PREFIX):
        text = text[len(_MODEL_PREFIX):].strip()
    if text.startswith(_NAME_PREFIX):
        text = text[len(_NAME_PREFIX):].strip()
    kind = text.partition(":")[0]
    if not text or ":" not in text or kind not in registry.models:
        given = "none" if spec is None else repr(spec)
        raise ConfigError(f"--protocol {PROTOCOL} needs a vision model as the designer, as in "
                          "the SWEET-RL harness: pass --simulator openai:MODEL@URL (a model "
                          f"that accepts images; got {given})")
    return make_simulator(f"{_NAME_PREFIX}{text}", suite=suite)

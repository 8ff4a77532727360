"""Where the action is in an agent's message: the one grammar the text gyms share.

TextCraft, BabyAI and SciWorld each take one action per message, and models write it in
several ways: colbench's prompts ask for a last line ``Action: X``; AgentGym's agents, and the
models trained on their trajectories, write ``Thought:\\n...\\n\\nAction:\\nX`` with the action on
the line *after* the label; other models put it in a fenced block. A gym that read only one of
these would score a capable model 0 for its formatting, so every gym reads all of them, by this
module's rules (what an action *means* stays each gym's own business):

1. ``Action: X``: the text after the label, on the same line;
2. ``Action:`` alone on its line, then ``X``: the next non-empty line;
3. a fenced block (three backticks, with or without a language tag): its content; a
   labelled action inside the block counts as the block's action;
4. none of these: the message's last non-empty line (a bare action).

When a message holds several labels or blocks, the last one wins (a model that revises its
plan ends with the action it means). The label is matched at the start of a line, in any case,
with Markdown emphasis or heading marks around it (``**Action:**``, ``### Action:``).
:data:`ACTION_FORMS` says all this in one sentence, for the refusal an env sends when it could
not find or understand an action.
"""

from __future__ import annotations

import re

#: The valid answer forms, for refusal messages.
ACTION_FORMS = ("Write the action after 'Action:' (on the same line or on the next line), or "
                "alone in a fenced code block, at the end of your message.")

#: ``Action:`` at the start of a line, maybe wrapped in Markdown emphasis or after heading or
#: quote marks; ``rest`` is what follows it on the same line.
_LABEL = re.compile(r"^[ \t#>*_]*action[ \t*_]*:[ \t*_]*(?P<rest>[^\n]*)$",
                    re.IGNORECASE | re.MULTILINE)
#: A closed fenced block; an info string (``python``) counts only when a newline follows it,
#: so that a one-line block such as ```look around``` keeps its first word.
_FENCE = re.compile(r"```(?:[\w+.-]*[ \t]*\n)?(?P<body>.*?)```", re.DOTALL)
#: Wrapping that is never part of an action: quotes, backticks, Markdown emphasis.
_WRAPPING = "`'\"*_ \t"


def find_action(message: str) -> str:
    """The action text of ``message`` by the module's rules, stripped of surrounding
    whitespace and otherwise as written; ``""`` when the message holds none."""
    if not isinstance(message, str):
        raise TypeError(f"an agent's message is a str, got {type(message).__name__}")
    labels = list(_LABEL.finditer(message))
    fences = list(_FENCE.finditer(message))
    label = labels[-1] if labels else None
    fence = fences[-1] if fences else None
    if fence is not None and (label is None or fence.end() > label.end()):
        body = fence.group("body")
        # A labelled action written inside the block: the label's rule applies within it.
        return find_action(body) if _LABEL.search(body) else body.strip()
    if label is not None:
        rest = label.group("rest").strip()
        if rest:
            return rest
        following = [line for line in message[label.end():].splitlines() if line.strip()]
        return following[0].strip() if following else ""
    lines = [line for line in message.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def clean_command(text: str, *, lower: bool = False) -> str:
    """A one-line command from an action text: surrounding quotes, backticks and emphasis
    and a final full stop dropped, runs of whitespace made one space; lower case when asked
    (for games whose commands ignore case)."""
    command = text.strip().strip(_WRAPPING)
    if command.endswith("."):
        command = command[:-1].rstrip().strip(_WRAPPING)
    command = " ".join(command.split())
    return command.lower() if lower else command


def extract_command(message: str, *, lower: bool = False) -> str:
    """The one-line command in an agent's message: :func:`find_action`, then
    :func:`clean_command`. ``""`` when the message holds no action."""
    return clean_command(find_action(message), lower=lower)


#: The refusal AgentGym's TextCraft and BabyAI clients send when a message holds more than
#: one ``Action:`` label (the turn is spent and nothing is done).
AGENTGYM_ONE_ACTION = ("Error: Only one 'Action' is allowed per response. Please adjust your "
                       "response.")
# AgentGym's clients: the label, case-sensitive, then any whitespace (newlines included, so
# the action may sit on the next line), then the rest of that line.
_AGENTGYM_LABEL = re.compile(r"Action:\s*(.*?)(?=\n|$)", re.DOTALL)
_AGENTGYM_DROPPED = re.compile(r"[^A-Za-z0-9, ]+")


def agentgym_command(message: str) -> str | None:
    """The command an AgentGym TextCraft or BabyAI client would send for ``message``, or
    None when it would send nothing and answer :data:`AGENTGYM_ONE_ACTION` (more than one
    ``Action:`` label). Reproduced so that ``--protocol agentgym`` reads a message exactly
    as the published numbers were read: the text after the only label (on its line or the
    next non-blank one), every character but letters, digits, commas and spaces dropped,
    whitespace collapsed; a message without the label is the empty command."""
    found = _AGENTGYM_LABEL.findall(message)
    if len(found) > 1:
        return None
    command = _AGENTGYM_DROPPED.sub("", found[0]) if found else ""
    return " ".join(command.split())

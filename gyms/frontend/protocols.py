"""The frontend's protocols as objects: colbench's own and ``sweet-rl``.

(:mod:`colbench.gyms.frontend.protocol` is the answer format; this module names the rule sets
an env plays by.) Each protocol owns its task set and source, the instructions (a system
prompt under both), how the agent's message is read (its page and whether it is the final
answer), the closing observation, the designer who answers and what that designer is shown,
the scorer, the turn budget, the agent's default sampling and the board ranking its runs are
listed by; :class:`~colbench.gyms.frontend.env.FrontendEnv` and
:class:`~colbench.gyms.frontend.replay.FrontendReplay` delegate every one of those to the
protocol a run plays.

``sweet-rl`` plays by the SWEET-RL harness's rules (:mod:`colbench.gyms.frontend.sweet_rl`):
its designer is a vision model shown the page of the current message only, and the agent is
sampled as the harness does (T = 1.0, 1,024 new tokens). The paper's numbers are on the
harness's 500 WebSight pages; a run on colbench's generated pages says so in ``summary.json``
and at start, with the command that imports the published set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colbench.gyms.frontend import sweet_rl
from colbench.gyms.frontend.protocol import ANSWER_MARKER, extract_html, is_final_answer
from colbench.gyms.frontend.tasks import OFFICIAL_SOURCE
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, SamplingDefaults
from colbench.tasks import TaskSet

SYSTEM_PROMPT = """You are helping a person build a web page. They have a clear picture of the \
page in mind but describe it only vaguely. Write the page as one complete HTML document styled \
with Tailwind CSS (load it with <script src="https://cdn.tailwindcss.com"></script>). Each time \
you send HTML, the person sees your page next to the one they have in mind and tells you what \
differs; you may also ask them questions. You have at most {max_turns} messages in total. The \
last HTML you wrote is your answer. When you are done, send a message that starts with \
"{marker}" (you may put the final HTML after it). Your last allowed message ends the \
conversation whatever it says."""

#: What the env says when an episode ends: the score of the page it scored.
CLOSING = "Your page scored {score:.3f} against the page I had in mind."


@dataclass(frozen=True)
class FrontendProtocol(Protocol):
    """colbench's own frontend rules: generated pages (or an imported set), colbench's
    instructions, the built-in DOM-reading designer or a model one (``--simulator``), shown
    the agent's latest page whichever message sent it. Subclasses change what differs.

    Parameters
    ----------
    ranking:
        The summary metrics a leaderboard board of this protocol's runs ranks by, best
        first; empty: the leaderboard's default (success rate, then score).
    """

    ranking: tuple[str, ...] = ()

    def load_tasks(self, split: str, tasks: str | None) -> TaskSet:
        """The task set of ``split``, or the set ``tasks`` names.

        Parameters
        ----------
        split:
            ``train`` or ``test``.
        tasks:
            A task-set name, a colbench task JSONL or a published ColBench frontend JSONL;
            None: colbench's generated pages of ``split``.
        """
        from colbench.gyms.frontend.tasks import load_frontend_tasks

        return load_frontend_tasks(split, tasks)

    def system_prompt(self, max_turns: int) -> str:
        """The instructions for an episode of ``max_turns`` turns.

        Parameters
        ----------
        max_turns:
            The episode's turn budget.
        """
        return SYSTEM_PROMPT.format(max_turns=max_turns, marker=ANSWER_MARKER)

    def make_designer(self, spec: Any) -> Any:
        """The simulated designer ``--simulator``'s ``spec`` names.

        Parameters
        ----------
        spec:
            None or ``builtin`` (the DOM-reading designer), a model spec, a registered
            simulator, or an object with ``reply``.
        """
        from colbench.gyms.frontend.designer import make_designer

        return make_designer(spec)

    def read_page(self, message: str) -> str | None:
        """The page in the agent's ``message``, or None when it holds none.

        Parameters
        ----------
        message:
            The agent's whole message.
        """
        return extract_html(message)

    def is_final(self, message: str) -> bool:
        """Whether the agent's ``message`` is its final answer.

        Parameters
        ----------
        message:
            The agent's whole message.
        """
        return is_final_answer(message)

    def shown_page(self, sent_page: bool, current: Any | None) -> Any | None:
        """The render of the agent's page the designer is shown after a message.

        Parameters
        ----------
        sent_page:
            Whether this message held a page.
        current:
            The render of the agent's latest page (None: it has sent none).
        """
        return current

    def closing_observation(self, score: float) -> str:
        """The observation that ends an episode scored ``score``.

        Parameters
        ----------
        score:
            The final page's score.
        """
        return CLOSING.format(score=score)


@dataclass(frozen=True)
class SweetRLFrontendProtocol(FrontendProtocol):
    """The SWEET-RL harness's frontend rules (:mod:`colbench.gyms.frontend.sweet_rl`): its
    instructions, and its designer, a vision model shown only the page of the current
    message."""

    def system_prompt(self, max_turns: int) -> str:
        return sweet_rl.SYSTEM_PROMPT.format(max_turns=max_turns, marker=ANSWER_MARKER)

    def make_designer(self, spec: Any) -> Any:
        from colbench.gyms.frontend.designer import SUITE

        return sweet_rl.make_harness_designer(spec, SUITE)

    def shown_page(self, sent_page: bool, current: Any | None) -> Any | None:
        # The harness's designer sees the page of this message only, none from before.
        return current if sent_page else None


COLBENCH = FrontendProtocol(
    DEFAULT_PROTOCOL, summary="colbench's own frontend rules",
    task_source="colbench's generated pages, or an imported set (--tasks)",
    max_turns=10, scorer="CLIP similarity of full-page renders (--scorer)",
    simulator={"kind": "builtin or a model (--simulator)"})
SWEET_RL = SweetRLFrontendProtocol(
    sweet_rl.PROTOCOL, summary="the SWEET-RL harness's ColBench frontend rules",
    task_source="the harness's WebSight pages where imported (colbench data import), else "
                "colbench's generated pages",
    max_turns=10, sampling=SamplingDefaults(temperature=1.0, max_tokens=1024),
    scorer="CLIP similarity as the harness computes it",
    simulator={"kind": "a vision model, as the harness's designer", "reply_cut_chars": 1000},
    paper_task_source=OFFICIAL_SOURCE,
    paper_tasks_hint="--protocol sweet-rl on colbench's own pages: this number is not the "
                     "paper's task set; import the harness's WebSight test rows with "
                     "'colbench data import frontend FILE --name colbench-frontend-test' and "
                     "run with --tasks colbench-frontend-test",
    # Ranked by the paper's mean similarity (its other figure, the win rate, compares two
    # runs: the board shows it against a reference entry); success is colbench's own 0.9
    # threshold.
    ranking=("score", "success_rate"))

#: The frontend's protocols, its default first.
PROTOCOLS: tuple[FrontendProtocol, ...] = (COLBENCH, SWEET_RL)

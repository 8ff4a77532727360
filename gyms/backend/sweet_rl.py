"""ColBench Backend under ``--protocol sweet-rl``: the released SWEET-RL harness's rules.

The published backend numbers (SWEET-RL's paper) were measured by the harness released with
it (``facebookresearch/sweet_rl``: ``sweet_rl/utils/code_utils.py`` for the verdict,
``sweet_rl/environments/human_interaction_env.py`` for the dialogue). This module restates its
rules, so that colbench's numbers under this protocol can be set beside the paper's. The
isolation stays colbench's: the answer runs in the code sandbox, never in the evaluator.

* **The agent's message.** When a message contains ``OUTPUT:``, only the text between the
  first ``OUTPUT:`` and the next one counts (the person sees that part). A message that then
  contains ``I WANT TO ANSWER:`` is the final answer: the text between the first marker and
  the next one. At the tenth turn (the harness's ``max_steps``) the whole message is the
  answer.
* **Blocklist.** An answer whose text (the whole answer, prose included, before any code is
  taken out of it) contains any of :data:`BLOCKLIST` as a plain, case-sensitive substring
  scores 0 and nothing runs: ``import ossify`` and a comment that says ``sudo`` are hits, as
  they are in the harness.
* **Code.** From the answer, the text between the first ```` ```python```` and the next
  fence; else, when a fence remains, the text between the first two fences (a ```` ```py````
  fence keeps ``py`` as the code's first line, as in the harness); else the answer itself.
* **Bare exec.** Per test call, the code is run with ``exec`` into a fresh dictionary of
  locals, beside the harness module's globals, and the call is evaluated there. A function
  the code defines therefore looks its free names up in the harness's globals, not in that
  dictionary: a top-level ``import math``, a helper function, a constant or the function's
  own name (recursion) are not visible inside it, and the call fails. The globals hold what
  the harness module imported (``multiprocessing``, ``signal`` and ``queue.Empty`` as
  ``Empty``), so an answer may use those without importing them, as there. An exception, in
  the exec or in the call, makes the call's value None (the harness catches every
  ``Exception``); colbench records it as the call's error so the reason says what happened.
* **Time.** Each answer call (exec and evaluation together) has one second of wall-clock
  time (the harness's ``signal.alarm(1)``); the reference has none but the sandbox's limits.
* **Verdict.** A test passes when ``reference == answer`` (Python's ``==``: no tolerance on
  floats, ``0.1 + 0.2 == 0.3`` is false) and the reference's value is not None; a comparison
  that raises fails the test. Score = passed / tests; success = every test passed.
* **The reference.** The harness runs the reference the same bare way, so a published
  reference that imports at the top gives None and its tests pass for nobody: the published
  tasks' references run under these rules. colbench's own generated tasks keep their
  references run as modules, the way colbench validated them (a fifth of them import
  ``math`` at the top, and would otherwise be unsolvable).

Where colbench differs, and why: the answer runs in colbench's sandbox (its limits, no
network, output capped at its limit) rather than in the evaluator's process; each call
starts from a fresh copy of the harness's globals (in the harness a ``global`` statement
writes into its module and leaks into later calls and tasks); the simulated person is
colbench's built-in one unless ``--simulator`` names a model, which is then asked as the
harness asks its person (one message holding the transcript, T = 0, 4,096 new tokens, the
reply's first 400 characters, no code filter: the protocol's simulator settings in
:mod:`colbench.gyms.backend.protocols`), in colbench's words.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from colbench.answer import ANSWER_MARKER
from colbench.tasks import Task

PROTOCOL = "sweet-rl"
#: The harness's turn budget (``max_steps`` of its interaction env).
MAX_TURNS = 10
#: The substrings whose presence in an answer scores it 0 in the harness (``check_correctness``).
BLOCKLIST: tuple[str, ...] = ("import os", "from os", "import sys", "from sys", "sudo",
                              "transformers", "exit(", "quit(", "argparse")
#: Wall-clock seconds each answer call has (the harness's ``signal.alarm(1)``).
CALL_SECONDS = 1
#: The label the harness's agent prompt asks to precede the visible reply.
OUTPUT_LABEL = "OUTPUT:"
#: The scorer name results record for this protocol.
SCORER = "hidden-tests+sweet-rl"

SYSTEM_PROMPT = """You help a person write a Python function. What they want depends on \
details only they know, so ask them clarifying questions; keep each question simple, since \
they answer briefly, in two sentences. Be concise. The conversation lasts at most \
{max_turns} of your messages, and you must give your final answer before it ends. When you \
know enough, begin your message with "{marker}" and write the Python code right after it."""

_PYTHON_FENCE = "```python"
_FENCE = "```"

# The program the sandbox runs for each answer: it holds the code and the calls as string
# constants and reproduces the harness's bare exec per call (see the module docstring).
_DRIVER = '''\
import builtins as _builtins
import multiprocessing as _multiprocessing
import signal as _signal
from queue import Empty as _Empty

_SOURCE = {source!r}
_CALLS = {calls!r}
_SECONDS = {seconds!r}


class HarnessCallFailed(Exception):
    """The harness would have caught this exception and used None as the value."""


def _alarm(signum, frame):
    raise TimeoutError("Operation timed out")


def sweet_rl_call(index):
    harness_globals = {{"__builtins__": _builtins, "__name__": "sweet_rl.utils.code_utils",
                       "multiprocessing": _multiprocessing, "signal": _signal,
                       "Empty": _Empty}}
    frame_locals = {{"function_definition": _SOURCE, "test_case": _CALLS[index]}}
    if _SECONDS:
        _signal.signal(_signal.SIGALRM, _alarm)
        _signal.setitimer(_signal.ITIMER_REAL, _SECONDS)
    failure = None
    try:
        try:
            exec(_SOURCE, harness_globals, frame_locals)
            return eval(_CALLS[index], harness_globals, frame_locals)
        except Exception as exc:
            failure = f"{{type(exc).__name__}}: {{exc}}"
        finally:
            if _SECONDS:
                _signal.setitimer(_signal.ITIMER_REAL, 0)
    except TimeoutError:
        failure = "TimeoutError: Operation timed out"
    raise HarnessCallFailed("the harness's bare exec gives None (" + failure[:300] + ")")
'''


def visible_message(message: str) -> str:
    """The part of an agent's message the harness keeps: between the first ``OUTPUT:`` and
    the next one when the message has that label, else all of it."""
    if OUTPUT_LABEL in message:
        return message.split(OUTPUT_LABEL)[1]
    return message


def answer_of(message: str) -> str:
    """The answer in a (visible) message: between the first ``I WANT TO ANSWER:`` and the next
    one, or the whole message (the last turn's answer) when it has no marker."""
    if ANSWER_MARKER in message:
        return message.split(ANSWER_MARKER)[1]
    return message


def code_of(answer: str) -> str:
    """The code the harness runs from ``answer`` (see the module docstring)."""
    if _PYTHON_FENCE in answer:
        answer = answer.split(_PYTHON_FENCE)[1].split(_FENCE)[0]
    if _FENCE in answer:
        answer = answer.split(_FENCE)[1].split(_FENCE)[0]
    return answer


def self_contained(code: str) -> str:
    """``code`` with its top-level imports repeated at the start of each top-level function,
    so that a function sees them under the harness's bare exec (where a top-level ``import``
    is invisible inside it). What an agent aware of the rule writes; the oracle plays this
    form under the protocol. Code that does not parse is returned as it is."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    lines = code.splitlines()
    imports = [ast.get_source_segment(code, node) for node in tree.body
               if isinstance(node, (ast.Import, ast.ImportFrom))]
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    if not imports or not functions:
        return code
    import_lines = [line for text in imports if text for line in text.splitlines()]
    for function in reversed(functions):  # bottom up, so earlier line numbers hold
        body = function.body
        docstring = (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                     and isinstance(body[0].value.value, str) and len(body) > 1)
        first = body[1] if docstring else body[0]
        if first.lineno == function.lineno:  # a body on the def line: nowhere to put them
            continue
        indent = " " * first.col_offset
        lines[first.lineno - 1:first.lineno - 1] = [indent + line for line in import_lines]
    return "\n".join(lines) + ("\n" if code.endswith("\n") else "")


def blocklist_hit(answer: str) -> str | None:
    """The first :data:`BLOCKLIST` entry that ``answer`` contains, or None."""
    return next((entry for entry in BLOCKLIST if entry in answer), None)


def harness_program(code: str, calls: Sequence[str], *,
                    seconds: float | None) -> tuple[str, list[str]]:
    """The sandbox job that runs ``code`` on ``calls`` the harness's way: a module holding
    both, and one call expression per test. ``seconds``: each call's wall-clock alarm (None:
    no alarm, as for the harness's reference)."""
    source = _DRIVER.format(source=code, calls=list(calls), seconds=seconds or 0)
    return source, [f"sweet_rl_call({index})" for index in range(len(calls))]


def harness_equal(got: Any, expected: Any) -> bool:
    """The harness's test on an answer's value ``got``: ``expected == got`` (the reference
    on the left, as there) with Python's ``==``; a comparison that raises (an array's
    ambiguous truth value) fails the test."""
    try:
        return bool(expected == got)
    except Exception:
        return False


def reference_runs_bare(task: Task) -> bool:
    """Whether the reference of ``task`` runs under the harness's exec: the published tasks'
    do; colbench's generated tasks keep the module semantics their values were validated by."""
    return task.metadata.get("source") != "colbench-generator"


def score_answer(task: Task, answer: str, sandbox: Any) -> dict[str, Any]:
    """Metrics of ``answer`` (the text after the marker, or the last message) on ``task``
    under the harness's rules: the same keys as :func:`~colbench.gyms.backend.scoring.
    score_code`, with ``code`` (what ran)."""
    from colbench.gyms.backend.scoring import blocked_metrics, reference_results, tally

    code = code_of(answer)
    hit = blocklist_hit(answer)
    if hit is not None:
        metrics = blocked_metrics(task, f"the answer contains {hit!r}, which the SWEET-RL "
                                        "harness's blocklist rejects: scored 0, nothing ran")
        return {**metrics, "code": code}
    calls = list(task.privileged["test_cases"])
    reference_program = (harness_program(task.privileged["ground_truth"], calls, seconds=None)
                         if reference_runs_bare(task) else None)
    reference = reference_results(task, sandbox, program=reference_program)
    program, wrapped = harness_program(code, calls, seconds=CALL_SECONDS)
    verdict = sandbox.run_calls(program, wrapped)
    return {**tally(task, reference, verdict, harness_equal), "code": code}

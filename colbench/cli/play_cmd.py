"""``colbench play ENV_ID``: a person plays the agent in the terminal.

The person reads the system prompt and each observation and types the agent's messages. How
a message ends depends on the env: one whose actions are one line (a gym's ``go to kitchen``)
says so with the class attribute :data:`ONE_LINE_ATTRIBUTE` set true, and there Enter sends
the line (a line holding only ``<<`` starts a multi-line message instead); elsewhere (code,
HTML) a line holding only ``.`` ends a message, so messages may span lines. ``--multiline``
asks for the second way in any env. The env answers as it would answer a model, and the final
metrics are printed at the end. Input that ends early (end of file, Ctrl-D) or Ctrl-C stops
the episode without a score.

What the env sends (a task's prompt, a simulated person's reply, a page's text) and what was
typed or pasted is printed through :func:`colbench.terminal.safe_text`: escape sequences in it
show as text and never drive the terminal. The env receives the message as typed.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any, TextIO

from colbench.terminal import safe_text

INDENT = "    "

#: The env class attribute that asks ``play`` to send each line on Enter (see above).
ONE_LINE_ATTRIBUTE = "one_line_actions"
#: Ends a multi-line message.
END_LINE = "."
#: In one-line mode, starts a multi-line message (ended by :data:`END_LINE`).
MULTILINE_START = "<<"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "play", help="play the agent yourself in the terminal",
        description="Play one episode of ENV_ID as the agent: read the env's messages and "
                    "type yours. In envs whose actions are one line (the gyms) Enter sends "
                    "it; elsewhere (code, HTML) end each message with a line holding only "
                    "'.'.")
    p.add_argument("env_id", metavar="ENV_ID", help="env id, e.g. colbench/Backend-v0")
    p.add_argument("--tasks", metavar="NAME_OR_FILE", help="task set name or JSONL file")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--task-id", metavar="ID", help="play this task (default: picked by --seed)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="seed for the env (and the task, without --task-id)")
    p.add_argument("--simulator", metavar="SPEC",
                   help="simulated human: 'builtin' (default) or a model spec")
    p.add_argument("--max-turns", type=int, metavar="N", help="turn budget")
    p.add_argument("--env-arg", action="append", metavar="KEY=VALUE",
                   help="extra env option (repeatable)")
    p.add_argument("--multiline", action="store_true",
                   help="end every message with a line holding only '.', even in an env "
                        "whose actions are one line")
    p.set_defaults(func=run)


def read_message(stdin: TextIO, stdout: TextIO, *, one_line: bool) -> str:
    """The next message typed: one line when ``one_line`` (unless it is
    :data:`MULTILINE_START`, which starts a multi-line one), else lines up to one holding
    only :data:`END_LINE`. Raises EOFError when input ends before anything was typed."""
    if one_line:
        stdout.write(f"\nyour action (Enter sends it; a line holding only "
                     f"'{MULTILINE_START}' starts a multi-line message):\n> ")
        stdout.flush()
        line = stdin.readline()
        if line == "":
            raise EOFError("no more input")
        if line.strip() != MULTILINE_START:
            return line.rstrip("\n")
        stdout.write(f"(multi-line: end it with a line holding only '{END_LINE}')\n")
    else:
        stdout.write(f"\nyour message (end with a line holding only '{END_LINE}'):\n> ")
    stdout.flush()
    lines: list[str] = []
    while True:
        line = stdin.readline()
        if line == "":
            if not lines and not one_line:
                raise EOFError("no more input")
            break
        if line.rstrip("\n") == END_LINE:
            break
        lines.append(line.rstrip("\n"))
    return "\n".join(lines)


def _how_it_ended(terminated: bool, info: dict[str, Any], turn: int,
                  max_turns: int | None) -> str:
    """Why the episode is over, in the player's terms: an answer, the task's own end (a
    level solved or failed), the turn budget, or a step limit of the env's own."""
    if terminated:
        return "you answered" if info.get("final_answer") is not None \
            else "the task reached its end"
    if max_turns is None or turn >= max_turns:
        return "the turn budget ran out"
    return "the env's own step limit ran out"


def _block(label: str, text: str) -> str:
    """A labelled, indented block of untrusted ``text``, safe to print."""
    body = textwrap.indent(text.rstrip("\n"), INDENT, lambda _line: True) if text else INDENT
    return safe_text(f"[{label}]\n{body}")


def _format_metrics(metrics: dict[str, Any]) -> str:
    """The env's metrics, one per line, safe to print (a reason may quote the answer)."""
    return safe_text("\n".join(f"{INDENT}{key}: {value:.4g}" if isinstance(value, float)
                               else f"{INDENT}{key}: {value}" for key, value in metrics.items()))


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers env ids)
    from colbench.cli.evaluate_cmd import env_kwargs_from_args
    from colbench.envs import make
    from colbench.errors import ConfigError

    if args.max_turns is not None and args.max_turns < 1:
        raise ConfigError(f"--max-turns must be at least 1, got {args.max_turns}")
    stdout = sys.stdout
    options = env_kwargs_from_args(args)
    options.setdefault("split", args.split)
    if args.tasks is not None:
        options.setdefault("tasks", args.tasks)
    env = make(args.env_id, **options)
    try:
        reset_options = {"task_id": args.task_id} if args.task_id else None
        observation, info = env.reset(seed=args.seed, options=reset_options)
        max_turns = info.get("max_turns")
        one_line = bool(getattr(env.unwrapped, ONE_LINE_ATTRIBUTE, False)) \
            and not args.multiline
        how = ("Enter sends each action." if one_line
               else f"End each message with a line holding only '{END_LINE}'.")
        print(safe_text(f"{args.env_id}: task {info.get('task_id')}, at most {max_turns} "
                        f"message(s) from you. {how}", multiline=False), file=stdout)
        if info.get("system_prompt"):
            print(_block("system", info["system_prompt"]), file=stdout)
        print(_block("env", observation), file=stdout)
        turn = 0
        while True:
            try:
                text = read_message(sys.stdin, stdout, one_line=one_line)
            except EOFError:
                print("\ninput ended before the episode did; nothing was scored.",
                      file=sys.stderr)
                return 1
            if not text.strip():
                print("(an empty message; type something" + ("" if one_line else
                      f", then a line holding only '{END_LINE}'") + ")", file=stdout)
                continue
            if not sys.stdin.isatty():  # piped input: show it, so the output reads as a dialogue
                print(_block("you", text), file=stdout)
            turn += 1
            observation, reward, terminated, truncated, step_info = env.step(text)
            print(_block(f"env, reward {reward:.4g}", observation), file=stdout)
            for image in step_info.get("images") or []:
                print(safe_text(f"{INDENT}image: {image}", multiline=False), file=stdout)
            if terminated or truncated:
                how = _how_it_ended(terminated, step_info, turn, max_turns)
                print(f"\nepisode over after {turn} message(s): {how}.", file=stdout)
                if step_info.get("final_answer") is not None:
                    print(_block("final answer", str(step_info["final_answer"])), file=stdout)
                print("metrics:\n" + _format_metrics(step_info.get("metrics", {})), file=stdout)
                return 0
            if max_turns is not None:
                print(f"({max_turns - turn} message(s) left)", file=stdout)
    except KeyboardInterrupt:
        print("\ninterrupted; nothing was scored.", file=sys.stderr)
        return 130
    finally:
        env.close()

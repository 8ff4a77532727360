"""``colbench play ENV_ID``: a person plays the agent in the terminal.

The person reads the system prompt and each observation and types the agent's messages (a
line holding only ``.`` ends a message, so messages may span lines, as code does). The env
answers as it would answer a model, and the final metrics are printed at the end. Input that
ends early (end of file, Ctrl-D) or Ctrl-C stops the episode without a score.

What the env sends (a task's prompt, a simulated person's reply, a page's text) and what was
typed or pasted is printed through :func:`colbench.terminal.safe_text`: escape sequences in it
show as text and never drive the terminal. The env receives the message as typed.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

from colbench.terminal import safe_text

INDENT = "    "


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "play", help="play the agent yourself in the terminal",
        description="Play one episode of ENV_ID as the agent: read the env's messages and "
                    "type yours; end each message with a line holding only '.'.")
    p.add_argument("env_id", metavar="ENV_ID", help="env id, e.g. colbench/Backend-v0")
    p.add_argument("--tasks", metavar="NAME_OR_FILE", help="task set name or JSONL file")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--task-id", metavar="ID", help="play this task (default: picked by --seed)")
    p.add_argument("--seed", type=int, metavar="S",
                   help="seed for the env (and the task, without --task-id)")
    p.add_argument("--simulator", metavar="SPEC",
                   help="simulated human: 'builtin' (default) or a model spec")
    p.add_argument("--compat", action="store_true",
                   help="reproduce the reference harness's choices")
    p.add_argument("--max-turns", type=int, metavar="N", help="turn budget")
    p.add_argument("--env-arg", action="append", metavar="KEY=VALUE",
                   help="extra env option (repeatable)")
    p.set_defaults(func=run)


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
    from colbench.models.scripted import HumanModel

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
        print(safe_text(f"{args.env_id}: task {info.get('task_id')}, at most {max_turns} "
                        "message(s) from you. End each message with a line holding only '.'.",
                        multiline=False), file=stdout)
        if info.get("system_prompt"):
            print(_block("system", info["system_prompt"]), file=stdout)
        print(_block("env", observation), file=stdout)
        human = HumanModel(stdin=sys.stdin, stdout=stdout)
        messages: list[dict[str, str]] = []
        if info.get("system_prompt"):
            messages.append({"role": "system", "content": info["system_prompt"]})
        messages.append({"role": "user", "content": observation})
        turn = 0
        while True:
            try:
                text = human.generate([messages])[0].text
            except EOFError:
                print("\ninput ended before the episode did; nothing was scored.",
                      file=sys.stderr)
                return 1
            if not text.strip():
                print("(an empty message; type something, then a line holding only '.')",
                      file=stdout)
                continue
            if not sys.stdin.isatty():  # piped input: show it, so the output reads as a dialogue
                print(_block("you", text), file=stdout)
            turn += 1
            observation, reward, terminated, truncated, step_info = env.step(text)
            messages += [{"role": "assistant", "content": text},
                         {"role": "user", "content": observation}]
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

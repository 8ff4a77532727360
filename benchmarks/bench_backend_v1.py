"""What Backend-v1 measures that Backend-v0 does not: an open task space, a person who tells
only what is asked, and no credit for knowing the generator.

Three tables, each from one run of the real generator, simulators, env and sandbox:

1. Distinct program shapes over the first N test tasks of each version: the reference's
   syntax tree with names and constants abstracted (:func:`program_shape`), and the share
   of the largest shape. Target for v1: at least 900 of 1,000.
2. Off-topic leak rate: each task's simulated human gets five messages that ask about
   nothing in it (:data:`OFF_TOPIC_MESSAGES`); a task leaks when a reply states one of the
   reference's hidden constants (a number or a string of its code that the request does not
   state, numbers also as percentages). Target for v1: at most 2%.
3. A template matcher against the blind baselines on v1: the matcher (:class:`TemplateMatcher`)
   sees only the chat, like a model, and knows the package: it draws an index of programs
   from the generator's public code (the train split's space), picks the one whose signature
   and request match the chat's best, asks that program's questions, reads the values out of
   the replies and renders that program. Target: no more than the best blind baseline plus
   5 points. The oracle is the ceiling. The same again on a challenge split minted from v1
   (``--challenge-seed`` stands for a server's secret), whose skeletons no public split has.

Usage: ``python benchmarks/bench_backend_v1.py [--n 1000] [--leak-n 1000] [--play-n 300]
[--index 3000] [--challenge-n 100]``. Table 3 scores every answer in the code sandbox.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from colbench.baselines import BlindAgent, first_user_message
from colbench.gyms.backend.baselines import ANSWER_PREFIX, agent_turns, blind_code, signature_in
from colbench.gyms.backend.families.base import decimal_text
from colbench.gyms.backend.programs.generator import BUCKETS, TaskValidationError, draw_program
from colbench.gyms.backend.programs.parts import KINDS, read_values, sizes_of
from colbench.gyms.backend.programs.program import Program, program_shape, skeleton_bucket
from colbench.gyms.backend.programs.simulator import PartSimulator, reply_reveals
from colbench.gyms.backend.programs.tasks import mint_tasks
from colbench.gyms.backend.simulator import BuiltinCodeSimulator
from colbench.tasks import Task, TaskSet

V0 = "colbench/Backend-v0"
V1 = "colbench/Backend-v1"
#: Messages that ask about nothing in any task.
OFF_TOPIC_MESSAGES = ("Hi! How is your day going?", "asdf qwer zxcv",
                      "Can you tell me a joke?", "What's the weather like where you are?",
                      "Thanks, that's all for now.")


# -- 1. shapes ----------------------------------------------------------------------------------

def shape_counts(tasks: Sequence[Task]) -> Counter[str]:
    """How many tasks have each program shape."""
    return Counter(program_shape(t.privileged["ground_truth"]) for t in tasks)


# -- 2. leaks -----------------------------------------------------------------------------------

def hidden_constants(task: Task) -> list[str]:
    """The constants of the task's reference that its request does not state, as a reply
    would say them: numbers as written (fractions below 1 also as percentages), strings."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(task.privileged["ground_truth"])):
        if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
            continue
        value = node.value
        if isinstance(value, (int, float)):
            out.add(decimal_text(value))
            if isinstance(value, float) and 0 < abs(value) < 1:
                out.add(decimal_text(round(value * 100, 6)) + "%")
        elif isinstance(value, str) and value.strip():
            out.add(value)
    return sorted(c for c in out if not reply_reveals(task.prompt, [c]))


def leak_rate(tasks: Sequence[Task], simulator: Any) -> tuple[int, list[str]]:
    """How many tasks leak a hidden constant to an off-topic message, and an example."""
    leaked, examples = 0, []
    for task in tasks:
        hidden = hidden_constants(task)
        for message in OFF_TOPIC_MESSAGES:
            reply = simulator.reply(task, [], message)
            if reply_reveals(reply, hidden):
                leaked += 1
                if len(examples) < 2:
                    examples.append(f"{message!r} -> {reply!r}")
                break
    return leaked, examples


# -- 3. the template matcher --------------------------------------------------------------------

_WORD = re.compile(r"[a-z]+")


class TemplateIndex:
    """Programs drawn from the generator's public code (the train split's skeletons), by the
    argument names of their signature: what a solver can build from the package alone."""

    def __init__(self, size: int, seed: int = 7) -> None:
        self.by_args: dict[frozenset[str], list[tuple[Program, frozenset[str]]]] = {}
        self.all: list[tuple[Program, frozenset[str]]] = []
        rng = random.Random(seed)
        while len(self.all) < size:
            try:
                program = draw_program(rng, rng.choice((1, 2, 3)))
            except TaskValidationError:
                continue
            if skeleton_bucket(program.skeleton()) not in BUCKETS["train"]:
                continue
            words = frozenset(_WORD.findall(" ".join(program.hints()).lower()))
            entry = (program, words)
            self.all.append(entry)
            self.by_args.setdefault(frozenset(a.name for a in program.args), []).append(entry)

    def match(self, request: str, args: Sequence[str]) -> Program | None:
        """The indexed program closest to the chat: same argument names if any has them
        (else the most shared), then the most words shared with the request."""
        words = frozenset(_WORD.findall(request.lower()))
        pool = self.by_args.get(frozenset(args))
        if not pool:
            wanted = set(args)
            pool = self.all
            best = max(len(wanted & {a.name for a in p.args}) for p, _ in pool)
            pool = [(p, w) for p, w in pool if len(wanted & {a.name for a in p.args}) == best]
        if not pool:
            return None
        return max(pool, key=lambda entry: len(entry[1] & words))[0]


class TemplateMatcher(BlindAgent):
    """A solver that knows the package's generator and sees only the chat (see the module
    docstring). Built with :meth:`with_index` (the index is shared by every episode)."""

    index: TemplateIndex

    @classmethod
    def with_index(cls, index: TemplateIndex) -> type[TemplateMatcher]:
        return type("BoundTemplateMatcher", (cls,), {"index": index})

    def act(self, messages: Sequence[Any]) -> str:
        request = first_user_message(messages)
        found = signature_in(request)
        if found is None:
            return ANSWER_PREFIX + blind_code(request)
        name, arg_text = found
        args = [a.strip() for a in arg_text.split(",") if a.strip()]
        template = self.index.match(request, args)
        if template is None:
            return ANSWER_PREFIX + blind_code(request)
        program = Program.from_json(template.to_json())
        asked = [p for p in program.parts() if KINDS[p.kind].slots(p)][:8]
        contexts = dict((id(p), c) for p, c in program.contexts())
        mine, replies = agent_turns(messages)
        if len(mine) < len(asked):
            part = asked[len(mine)]
            return KINDS[part.kind].question(part, contexts[id(part)])
        for part, reply in zip(asked, replies, strict=False):
            if reply:
                part.values.update(read_values(KINDS[part.kind].slots(part), reply,
                                               sizes_of(part)))
        program.function = name
        order = {a: i for i, a in enumerate(args)}
        program.args.sort(key=lambda a: order.get(a.name, len(order)))
        try:
            return ANSWER_PREFIX + program.source()
        except Exception:  # a value it misread that the code cannot take
            return ANSWER_PREFIX + blind_code(request)


def play_agent(env: Any, act: Any, task_id: str) -> dict[str, Any]:
    """One episode with ``act(messages) -> str``; the terminal metrics."""
    observation, info = env.reset(seed=0, options={"task_id": task_id})
    messages = [{"role": "system", "content": info["system_prompt"]},
                {"role": "user", "content": observation}]
    while True:
        action = act(list(messages))
        observation, _, terminated, truncated, info = env.step(action)
        messages += [{"role": "assistant", "content": action},
                     {"role": "user", "content": observation}]
        if terminated or truncated:
            return dict(info.get("metrics") or {})


def scripted_act(env: Any, name: str, task_id: str) -> Any:
    from colbench.models.base import EpisodeContext
    from colbench.models.scripted import ScriptedModel

    bound = ScriptedModel(name).bind_episode(env, EpisodeContext("bench", task_id, 0, 0))
    return lambda messages: bound.generate([messages])[0].text


def play_table(env: Any, tasks: Sequence[Task], index: TemplateIndex
               ) -> dict[str, tuple[float, float]]:
    """Success and score (percent) of each agent on ``tasks``."""
    matcher = TemplateMatcher.with_index(index)
    agents = {"no-ask (blind)": lambda t: scripted_act(env, "no-ask", t.id),
              "ask-then-answer (blind)": lambda t: scripted_act(env, "ask-then-answer", t.id),
              "template matcher": lambda t: matcher().act,
              "oracle (ceiling)": lambda t: scripted_act(env, "oracle", t.id)}
    out = {}
    for label, make in agents.items():
        success = score = 0.0
        for task in tasks:
            metrics = play_agent(env, make(task), task.id)
            success += float(metrics["success"])
            score += float(metrics["score"])
        out[label] = (100 * success / len(tasks), 100 * score / len(tasks))
    return out


def print_table(table: dict[str, tuple[float, float]], what: str, start: float) -> None:
    """The agents' rows, and the matcher's margin over the best blind baseline."""
    print(f"   {'agent':<26} {'success %':>9} {'score %':>8}   ({what})")
    for label, (success, score) in table.items():
        print(f"   {label:<26} {success:>9.1f} {score:>8.1f}")
    blind = [v for k, v in table.items() if "(blind)" in k]
    matcher = table["template matcher"]
    print(f"   matcher minus best blind: success {matcher[0] - max(b[0] for b in blind):+.1f} "
          f"points, score {matcher[1] - max(b[1] for b in blind):+.1f} points "
          f"({time.perf_counter() - start:.0f} s)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="test tasks for the shape count")
    parser.add_argument("--leak-n", type=int, default=1000, help="test tasks for the leak rate")
    parser.add_argument("--play-n", type=int, default=300,
                        help="test tasks for the matcher and the baselines")
    parser.add_argument("--index", type=int, default=3000,
                        help="programs in the matcher's index")
    parser.add_argument("--challenge-n", type=int, default=100,
                        help="tasks of a challenge split minted from v1 for the matcher")
    parser.add_argument("--challenge-seed", type=int, default=913_271,
                        help="the seed the challenge split is minted from (a server's secret)")
    args = parser.parse_args(argv)
    for flag in ("n", "leak_n", "play_n", "index", "challenge_n"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")

    import colbench

    envs = {V0: colbench.make(V0), V1: colbench.make(V1)}
    tasks = {env_id: list(env.unwrapped.tasks) for env_id, env in envs.items()}

    print("1. distinct program shapes (names and constants abstracted)")
    for env_id, ts in tasks.items():
        counts = shape_counts(ts[: args.n])
        print(f"   {env_id:<22} {len(counts):>5} shapes over {min(args.n, len(ts))} test tasks;"
              f" largest shape covers {counts.most_common(1)[0][1]}")

    print("2. off-topic leak rate (tasks where a reply to an off-topic message states a "
          "hidden constant)")
    simulators = {V0: BuiltinCodeSimulator(), V1: PartSimulator()}
    for env_id, ts in tasks.items():
        sample = ts[: args.leak_n]
        leaked, examples = leak_rate(sample, simulators[env_id])
        print(f"   {env_id:<22} {leaked:>5} of {len(sample)} ({100 * leaked / len(sample):.1f}%)")
        for example in examples[:1]:
            print(f"      e.g. {example[:160]}")

    print(f"3. {V1}: a template matcher that knows the generator, against the blind "
          "baselines")
    start = time.perf_counter()
    index = TemplateIndex(args.index)
    print_table(play_table(envs[V1], tasks[V1][: args.play_n], index),
                f"{args.play_n} test tasks, index of {args.index} programs", start)
    start = time.perf_counter()
    minted = mint_tasks(args.challenge_seed, args.challenge_n, split="challenge-bench")
    challenge_env = colbench.make(V1, tasks=TaskSet(minted.name, list(minted)))
    try:
        print_table(play_table(challenge_env, list(minted), index),
                    f"{args.challenge_n} tasks of a challenge split minted from v1", start)
    finally:
        challenge_env.close()
    for env in envs.values():
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

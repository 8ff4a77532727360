"""The backend task generator: seeded tasks in the published ColBench format, plus facts.

Each task is one family (see :mod:`colbench.gyms.backend.families`) with its hidden parameters drawn
from ``random.Random``. The task carries what the published data has (``problem_description``
as the prompt, the reference function as ``ground_truth``, ten ``test_cases`` call strings)
and one structured fact per hidden parameter.

Determinism: the only source of randomness is ``random.Random(seed)`` with integer seeds made
from the set's seed, the task's index and the attempt number; nothing depends on ``hash()``,
set order or the machine, so a task set's hash is the same everywhere.

Validation (in-process: this is our own trusted code): the reference runs on all ten calls with
no exception and no None; at least one call returns something different from the naive
implementation (the same family rendered with the values the request alone suggests); no hidden
number or name appears in the prompt. A task that fails, or repeats an earlier reference, is
drawn again with the next attempt's seed; so is one whose hidden values repeat an earlier task
of the test set, or any task of the test set when drawing the train set.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Collection, Sequence
from typing import Any

from colbench.gyms.backend.families import FAMILIES, Family, get_family
from colbench.gyms.backend.families.base import decimal_text
from colbench.tasks import Task

GENERATOR_VERSION = "1"
SOURCE = "colbench-generator"
SUITE = "backend"
SPLITS = ("train", "test")
MAX_ATTEMPTS = 64

_OPENERS = ("", "Hi! ", "Hello, ", "Hey there. ", "Quick request: ", "I need some help. ",
            "Hi, I hope you can help. ")
_CLOSERS = ("", " Can you write it for me?", " Could you help me write this function?",
            " Thanks in advance!", " Ask me if anything is unclear.",
            " I know the details, so just ask.")
SIGNATURE_LEAD = "The signature of the function is: "


class TaskValidationError(ValueError):
    """A drawn task broke one of the generator's rules (the message says which)."""


def task_id(split: str, index: int) -> str:
    return f"{SUITE}-{split}-{index:05d}"


def compose_prompt(family: Family, rng: random.Random, fn: str) -> str:
    """A request in a person's voice, ending with the function signature."""
    request = rng.choice(family.requests)
    text = rng.choice(_OPENERS) + request + rng.choice(_CLOSERS)
    return f"{text}\n\n{SIGNATURE_LEAD}{family.signature(fn)}"


def _task_seed(seed: int, index: int, attempt: int) -> int:
    # Disjoint integer seeds per (set seed, index, attempt); no hashing involved.
    return (seed * 1_000_000 + index) * 256 + attempt


def draw_task(family: Family, split: str, index: int, seed: int, attempt: int = 0) -> Task:
    """Draw one task of ``family`` (not yet validated)."""
    rng = random.Random(_task_seed(seed, index, attempt))
    values = family.sample(rng)
    fn = rng.choice(family.function_names)
    prompt = compose_prompt(family, rng, fn)
    reference = family.render(values, fn)
    calls = family.call_strings(values, rng, fn)
    return Task(
        id=task_id(split, index), suite=SUITE, split=split, prompt=prompt,
        privileged={"ground_truth": reference, "test_cases": calls, "function_name": fn,
                    "facts": family.facts(values)},
        metadata={"family": family.name, "signature": family.signature(fn), "source": SOURCE,
                  "generator_version": GENERATOR_VERSION,
                  "open_details": [p.name for p in family.params]})


def run_calls(source: str, calls: Sequence[str], name: str = "<reference>") -> list[Any]:
    """Exec ``source`` and evaluate the calls in its namespace (trusted code only)."""
    namespace: dict[str, Any] = {}
    exec(compile(source, name, "exec"), namespace)
    # One compiled list expression instead of ten evals: generation runs this 20 times a task.
    return eval(compile("[" + ",\n".join(calls) + "]", "<calls>", "eval"), namespace)


def _mentions(prompt: str, text: str, *, case: bool = True) -> bool:
    if not text:
        return False
    flags = 0 if case else re.IGNORECASE
    return re.search(r"(?<![\w.])" + re.escape(text) + r"(?![\w]|\.\d)", prompt, flags) is not None


def leaked_values(task: Task, family: Family | None = None) -> list[str]:
    """Hidden values (numbers, names, list items) that appear verbatim in the prompt.

    A name is not a leak when the prompt lists every option the family could have drawn
    (the input's domain, like the four regions), since that tells nothing about the pick; nor
    are quoted word lists (stop words like "the" are ordinary English).
    """
    family = family or get_family(task.metadata.get("family"))
    leaks = []
    for fact in task.privileged.get("facts", []):
        raw, kind = fact["raw"], fact["kind"]
        if kind == "number":
            texts = {fact["value"], decimal_text(raw)}
            if fact["value"].endswith("%"):
                texts.add(fact["value"][:-1])
            leaks += sorted(t for t in texts if _mentions(task.prompt, t))
            continue
        if kind not in ("text", "list"):
            continue
        items = [str(x) for x in raw] if kind == "list" else [str(raw)]
        mentioned = [item for item in items if _mentions(task.prompt, item)]
        if not mentioned:
            continue
        param = _param_or_none(family, fact["name"])
        if param is not None:
            if kind == "list" and param.quoted:
                continue
            if all(_mentions(task.prompt, str(o)) for o in param.options):
                continue
        leaks += mentioned
    return leaks


def _param_or_none(family: Family | None, name: str) -> Any:
    if family is None:
        return None
    try:
        return family.param(name)
    except KeyError:
        return None


def validate_task(task: Task, family: Family | None = None) -> None:
    """Raise :class:`TaskValidationError` unless ``task`` follows the generator's rules."""
    family = family or get_family(task.metadata.get("family"))
    if family is None:
        raise TaskValidationError(f"{task.id}: unknown family {task.metadata.get('family')!r}")
    calls = task.privileged["test_cases"]
    fn = task.privileged["function_name"]
    if len(calls) != 10:
        raise TaskValidationError(f"{task.id}: {len(calls)} test calls, not 10")
    try:
        outputs = run_calls(task.privileged["ground_truth"], calls)
    except Exception as exc:
        raise TaskValidationError(f"{task.id}: the reference raised {exc!r}") from exc
    for call, out in zip(calls, outputs, strict=True):
        if out is None:
            raise TaskValidationError(f"{task.id}: the reference returns None on {call}")
    naive = family.render(family.naive_values(), fn)
    try:
        naive_outputs = run_calls(naive, calls, "<naive>")
    except Exception as exc:
        raise TaskValidationError(f"{task.id}: the naive implementation raised {exc!r}") from exc
    if naive_outputs == outputs:
        raise TaskValidationError(f"{task.id}: no test call tells the reference apart from the "
                                  "naive implementation")
    leaks = leaked_values(task, family)
    if leaks:
        raise TaskValidationError(f"{task.id}: the prompt gives away {leaks!r}")


def hidden_key(task: Task) -> str:
    """What makes two tasks the same hidden task: the family and the drawn values. The test
    set never repeats one, and the train set never uses one of the test set's."""
    raws = [f["raw"] for f in task.privileged.get("facts", [])]
    return task.metadata.get("family", "") + ":" + json.dumps(raws, sort_keys=True)


def content_key(task: Task) -> str:
    """What makes two tasks identical: prompt, reference and test calls."""
    p = task.privileged
    return json.dumps([task.prompt, p["ground_truth"], p["test_cases"]])


def generate_task(family: Family, split: str, index: int, seed: int,
                  taken: Collection[str] = (), *, distinct: bool = True) -> Task:
    """The first valid task of ``family`` at ``index`` whose key is not ``taken`` (the key is
    :func:`hidden_key` when ``distinct``, else both keys are checked against ``taken``)."""
    reasons = []
    for attempt in range(MAX_ATTEMPTS):
        task = draw_task(family, split, index, seed, attempt)
        keys = [hidden_key(task)] if distinct else [hidden_key(task), content_key(task)]
        if any(key in taken for key in keys):
            reasons.append("already taken")
            continue
        try:
            validate_task(task, family)
        except TaskValidationError as exc:
            reasons.append(str(exc))
            continue
        return task
    raise RuntimeError(f"family {family.name!r} gave no valid task at index {index} in "
                       f"{MAX_ATTEMPTS} attempts; last reasons: {reasons[-3:]}")


def family_order(seed: int, families: Sequence[Family] = FAMILIES) -> list[Family]:
    """The round-robin order of families for a set: a seeded shuffle, so that every family
    gets the same share of tasks (to within one)."""
    order = list(families)
    random.Random(seed).shuffle(order)
    return order


def generate_tasks(split: str, n: int, seed: int, *, exclude: Collection[str] = (),
                   distinct: bool = True, start: int = 0,
                   families: Sequence[Family] | None = None) -> list[Task]:
    """``n`` validated tasks of ``split`` (indices ``start`` .. ``start + n - 1``).

    ``exclude`` holds :func:`hidden_key` values that must not be drawn (another split's). With
    ``distinct`` no two tasks share hidden values; without it (a large train set, where some
    families have fewer value combinations than tasks) only identical tasks are avoided.
    Task ``i`` depends on ``(seed, i)`` and on what was already taken, so a slice generated on
    its own matches the same slice of the full set unless an earlier draw was skipped.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if n < 0:
        raise ValueError(f"n must not be negative, got {n}")
    order = family_order(seed, families or FAMILIES)
    taken: set[str] = set(exclude)
    tasks = []
    for index in range(start, start + n):
        family = order[index % len(order)]
        task = generate_task(family, split, index, seed, taken, distinct=distinct)
        taken.add(hidden_key(task) if distinct else content_key(task))
        tasks.append(task)
    return tasks


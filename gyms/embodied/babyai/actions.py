"""Parsing BabyAI text actions and running them as minigrid primitive actions."""

from __future__ import annotations

import re
from typing import Any

from colbench.actions import ACTION_FORMS
from colbench.gyms.embodied.babyai.world import (
    DONE,
    DROP,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    TOGGLE,
    CompileError,
    Plan,
    World,
    front_of,
)

ACTION_HELP = ("Valid actions: turn left, turn right, move forward, go to X, pick up X, drop, "
               "put next to X, toggle, toggle X, go through DOOR, check available actions.")


class ActionFailed(Exception):
    """The action was not carried out; the message is the observation."""


def _execute(env: Any, actions: tuple[int, ...] | list[int], executed: list[int]) -> None:
    for action in actions:
        executed.append(action)
        before = env.view.state()
        if not env.primitive(action):
            return
        if action == FORWARD and env.view.state() == before:
            raise ActionFailed("Something blocked your way; you stopped.")


def _plan_or_fail(plan: Plan | None, what: str) -> Plan:
    if plan is None:
        raise ActionFailed(f"You cannot find a way to {what}: objects or doors you cannot open "
                           "are in the way.")
    return plan


def _resolve(world: World, text: str) -> Any:
    try:
        return world.resolve(text)
    except CompileError as exc:
        raise ActionFailed(str(exc)) from exc


def _target(world: World, text: str, verb: str) -> Any:
    obj = _resolve(world, text)
    if obj is world.env.carrying:
        raise ActionFailed(f"You are carrying the {world.name(obj)}; you cannot {verb} it.")
    return obj


def available_actions(world: World) -> str:
    env = world.env
    lines = ["turn left", "turn right", "move forward"]
    front = env.grid.get(*env.front_pos)
    carrying = env.carrying
    if front is not None and front.type in ("ball", "box", "key") and carrying is None:
        lines.append("pick up")
    if front is not None and front.type in ("door", "box"):
        lines.append("toggle")
    if carrying is not None and front is None:
        lines.append("drop")
    for obj in world.known_objects():
        if obj is carrying:
            continue
        name = world.name(obj)
        lines.append(f"go to {name}")
        if obj.type == "door":
            lines += [f"toggle {name}", f"go through {name}"]
        else:
            if carrying is None:
                lines.append(f"pick up {name}")
            if obj.type == "box":
                lines.append(f"toggle {name}")
        if carrying is not None:
            lines.append(f"put next to {name}")
    return "Available actions: " + ", ".join(lines) + "."


def run_action(env: Any, command: str, executed: list[int]) -> str:
    """Carry out ``command`` in ``env`` (a BabyAIEnv); return what happened."""
    world: World = env.view
    game = env.game
    if not command:
        raise ActionFailed(f"Your message held no action. {ACTION_HELP} {ACTION_FORMS}")
    if command in ("check available actions", "available actions", "help"):
        return available_actions(world)
    if command in ("turn left", "left"):
        _execute(env, [LEFT], executed)
        return "You turned left."
    if command in ("turn right", "right"):
        _execute(env, [RIGHT], executed)
        return "You turned right."
    if command in ("move forward", "go forward", "forward"):
        front = game.grid.get(*game.front_pos)
        if front is not None and not front.can_overlap():
            what = "a wall" if front.type == "wall" else world.describe_object(front)
            raise ActionFailed(f"You cannot move forward: {what} is in front of you.")
        _execute(env, [FORWARD], executed)
        return "You moved forward."
    if command in ("pick up", "pickup", "pick it up"):
        return _pickup_front(env, executed)
    if command in ("drop", "drop it", "put down"):
        front = game.grid.get(*game.front_pos)
        if game.carrying is None:
            raise ActionFailed("You are not carrying anything.")
        if front is not None:
            raise ActionFailed("You cannot drop here: the cell in front of you is not empty.")
        name = world.name(game.carrying)
        _execute(env, [DROP], executed)
        return f"You dropped the {name}."
    if command in ("toggle", "open"):
        return _toggle_front(env, executed)

    match = re.match(r"^(?:go to|goto|walk to|move to)\s+(?P<x>.+)$", command)
    if match:
        obj = _target(world, match.group("x"), "go to")
        plan = _plan_or_fail(world.plan_face(world.position(obj)), f"reach the {world.name(obj)}")
        # Already facing it: one "done" step, so that minigrid checks a "go to" mission.
        _execute(env, plan.actions or (DONE,), executed)
        return f"You went to the {world.name(obj)}."
    match = re.match(r"^(?:pick up|pickup|take|grab)\s+(?P<x>.+)$", command)
    if match:
        obj = _target(world, match.group("x"), "pick up")
        if obj.type == "door":
            raise ActionFailed("Doors cannot be picked up.")
        if game.carrying is not None:
            raise ActionFailed(f"You are already carrying the {world.name(game.carrying)}; "
                               "drop it first.")
        plan = _plan_or_fail(world.plan_face(world.position(obj)), f"reach the {world.name(obj)}")
        _execute(env, plan.actions, executed)
        return _pickup_front(env, executed)
    match = re.match(r"^(?:toggle|open|close|unlock)\s+(?P<x>.+)$", command)
    if match:
        obj = _target(world, match.group("x"), "toggle")
        if obj.type not in ("door", "box"):
            raise ActionFailed(f"The {world.name(obj)} cannot be toggled; doors and boxes can.")
        plan = _plan_or_fail(world.plan_face(world.position(obj)), f"reach the {world.name(obj)}")
        _execute(env, plan.actions, executed)
        return _toggle_front(env, executed)
    match = re.match(r"^(?:go through|walk through|pass through|enter)\s+(?P<x>.+)$", command)
    if match:
        obj = _target(world, match.group("x"), "go through")
        if obj.type != "door":
            raise ActionFailed(f"The {world.name(obj)} is not a door.")
        return _go_through(env, obj, executed)
    match = re.match(r"^(?:put|drop|place)(?:\s+.+?)?\s+next to\s+(?P<x>.+)$", command)
    if match:
        obj = _target(world, match.group("x"), "put something next to")
        if game.carrying is None:
            raise ActionFailed("You are not carrying anything to put down.")
        plan = _plan_or_fail(world.plan_next_to(world.position(obj)),
                             f"reach an empty cell next to the {world.name(obj)}")
        carried = world.name(game.carrying)
        _execute(env, plan.actions, executed)
        if env.over:
            return f"You went next to the {world.name(obj)}."
        _execute(env, [DROP], executed)
        return f"You put the {carried} next to the {world.name(obj)}."
    raise ActionFailed(f"Could not understand '{command}'. {ACTION_HELP} {ACTION_FORMS}")


def _pickup_front(env: Any, executed: list[int]) -> str:
    world: World = env.view
    game = env.game
    if env.over:
        return "You stopped."
    front = game.grid.get(*game.front_pos)
    if front is None or front.type not in ("ball", "box", "key"):
        raise ActionFailed("There is nothing to pick up in front of you.")
    if game.carrying is not None:
        raise ActionFailed(f"You are already carrying the {world.name(game.carrying)}; "
                           "drop it first.")
    name = world.name(front)
    _execute(env, [PICKUP], executed)
    return f"You picked up the {name}."


def _toggle_front(env: Any, executed: list[int]) -> str:
    world: World = env.view
    game = env.game
    if env.over:
        return "You stopped."
    front = game.grid.get(*game.front_pos)
    if front is None or front.type not in ("door", "box"):
        raise ActionFailed("There is nothing to toggle in front of you (doors and boxes can be "
                           "toggled).")
    name = world.name(front)
    if front.type == "door" and front.is_locked:
        carrying = game.carrying
        if carrying is None or carrying.type != "key" or carrying.color != front.color:
            raise ActionFailed(f"The {name} is locked; you need to carry a {front.color} key.")
    was_open = front.type == "door" and front.is_open
    _execute(env, [TOGGLE], executed)
    if front.type == "box":
        inside = game.grid.get(*game.front_pos)
        found = f" and found the {world.name(inside)}" if inside is not None else ""
        return f"You opened the {name}{found}."
    return f"You {'closed' if was_open else 'opened'} the {name}."


def _go_through(env: Any, door: Any, executed: list[int]) -> str:
    world: World = env.view
    game = env.game
    name = world.name(door)
    door_pos = world.position(door)
    if tuple(int(v) for v in game.agent_pos) == door_pos:
        beyond = tuple(int(v) for v in game.front_pos)
        if game.grid.get(*beyond) is not None:
            raise ActionFailed(f"Something blocks the way beyond the {name}.")
        _execute(env, [FORWARD], executed)
        return f"You went through the {name}."
    beyond = world.far_side(door)
    if game.grid.get(*beyond) is not None:
        raise ActionFailed(f"The way through the {name} is blocked on the other side.")
    # Face the door from the near side (the side opposite the one to reach).
    near = (2 * door_pos[0] - beyond[0], 2 * door_pos[1] - beyond[1])
    plan = _plan_or_fail(world.search(lambda s: (s[0], s[1]) == near
                                      and front_of(s) == door_pos),
                         f"reach the {name}")
    _execute(env, plan.actions, executed)
    if env.over:
        return f"You went to the {name}."
    if door.is_locked:
        carrying = game.carrying
        if carrying is None or carrying.type != "key" or carrying.color != door.color:
            raise ActionFailed(f"You reached the {name}, but it is locked; you need to carry a "
                               f"{door.color} key.")
    steps = ([TOGGLE] if not door.is_open else []) + [FORWARD, FORWARD]
    _execute(env, steps, executed)
    return f"You went through the {name}."

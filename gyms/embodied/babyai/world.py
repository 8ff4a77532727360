"""BabyAI as text: what the agent knows, how the view reads, and how high-level actions become
minigrid's primitive actions.

The agent sees what minigrid shows it (a 7x7 view ahead, walls hide what lies behind them) and
remembers every cell it has seen. Movable objects (balls, boxes, keys) can be named in actions
once they have been seen; doors belong to the floor plan and can always be named. Actions that
move the agent (``go to``, ``pick up X``, ``toggle X``, ``go through``, ``put next to``) are
compiled by a shortest-path search over (cell, heading) states in which every turn and every
step costs one primitive action; on the way, closed doors are opened (locked ones only when the
agent carries the key of their colour), and objects are never walked through.
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

# minigrid's headings: 0 east, 1 south, 2 west, 3 north (x grows east, y grows south).
DIR_VECS = ((1, 0), (0, 1), (-1, 0), (0, -1))
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = 0, 1, 2, 3, 4, 5
#: minigrid's "done": changes nothing, but like every step it lets the level's verifier look
#: (a "go to" mission is complete only when checked while the agent faces its target).
DONE = 6
MOVABLE = ("ball", "box", "key")

Pos = tuple[int, int]
State = tuple[int, int, int]


class CompileError(Exception):
    """An action that cannot be carried out here; the message is the observation."""


@dataclass(frozen=True)
class Plan:
    """Primitive actions and what the last one is for."""

    actions: tuple[int, ...]
    end: State


def front_of(state: State) -> Pos:
    x, y, d = state
    dx, dy = DIR_VECS[d]
    return x + dx, y + dy


def steps_word(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


class World:
    """The agent's knowledge of one episode of a minigrid BabyAI level."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.seen = np.zeros((env.width, env.height), dtype=bool)
        self._names: dict[int, str] = {}
        self._objects: dict[str, Any] = {}
        self._counters: dict[tuple[str, str], itertools.count] = {}
        # Doors are part of the floor plan: named from the start, in reading order.
        doors = [(y, x, cell) for x in range(env.width) for y in range(env.height)
                 if (cell := env.grid.get(x, y)) is not None and cell.type == "door"]
        for _, _, door in sorted(doors, key=lambda t: (t[0], t[1])):
            self._name(door)
        self.update()

    # -- names ------------------------------------------------------------------------------
    def _name(self, obj: Any) -> str:
        key = id(obj)
        if key not in self._names:
            counter = self._counters.setdefault((obj.color, obj.type), itertools.count(1))
            name = f"{obj.color} {obj.type} {next(counter)}"
            self._names[key] = name
            self._objects[name] = obj
        return self._names[key]

    def name(self, obj: Any) -> str:
        return self._name(obj)

    def known_objects(self) -> list[Any]:
        """Objects the agent may name: doors, and movable objects it has seen that are still
        on the floor (or carried)."""
        out = []
        for obj in self._objects.values():
            if obj.type == "door":
                out.append(obj)
            elif obj is self.env.carrying:
                out.append(obj)
            else:
                try:
                    self.position(obj)
                except ValueError:  # gone: inside a box that was opened, or replaced
                    continue
                out.append(obj)
        return sorted(out, key=lambda o: self._names[id(o)])

    def resolve(self, text: str) -> Any:
        """The known object a phrase names (``red ball 2``, ``the red ball``, ``key``)."""
        phrase = re.sub(r"^(the|a|an)\s+", "", " ".join(text.lower().split()))
        if not phrase:
            raise CompileError("Name an object, e.g. 'go to red ball 1'.")
        known = self.known_objects()
        by_name = {self._names[id(o)]: o for o in known}
        if phrase in by_name:
            return by_name[phrase]
        words = phrase.split()
        matches = [o for o in known
                   if (len(words) == 1 and words[0] == o.type)
                   or (len(words) == 2 and words == [o.color, o.type])]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            names = ", ".join(self._names[id(o)] for o in matches)
            raise CompileError(f"Which one do you mean: {names}?")
        kinds = [w for w in words if w in ("ball", "box", "key", "door")]
        if kinds == ["door"]:
            raise CompileError(f"There is no {phrase} here; doors are named like "
                               "'blue door 1' (see 'check available actions').")
        if kinds:
            raise CompileError(f"You have not seen any {phrase} (yet). Explore to find it; "
                               "'check available actions' lists what you can name.")
        raise CompileError(f"There is no object called '{phrase}'. Objects are named like "
                           "'red ball 1' or 'blue door'.")

    # -- perception -------------------------------------------------------------------------
    def view_cells(self) -> list[tuple[int, int, Pos, Any]]:
        """Visible cells as (steps right, steps ahead, absolute position, content)."""
        env = self.env
        grid, vis = env.gen_obs_grid()
        size = env.agent_view_size
        half = size // 2
        ax, ay = env.agent_pos
        fx, fy = DIR_VECS[env.agent_dir]
        rx, ry = -fy, fx  # the right-hand vector
        out = []
        for i in range(size):
            for j in range(size):
                if not vis[i, j]:
                    continue
                right, ahead = i - half, size - 1 - j
                x, y = ax + fx * ahead + rx * right, ay + fy * ahead + ry * right
                if 0 <= x < env.width and 0 <= y < env.height:
                    out.append((right, ahead, (x, y), env.grid.get(x, y)))
        return out

    def update(self) -> None:
        """Mark what the agent sees now as seen, and name new objects."""
        for _, _, (x, y), cell in self.view_cells():
            self.seen[x, y] = True
            if cell is not None and cell.type in MOVABLE + ("door",):
                self._name(cell)
        if self.env.carrying is not None:
            self._name(self.env.carrying)

    def describe_object(self, obj: Any) -> str:
        name = self._name(obj)
        if obj.type == "door":
            state = "locked" if obj.is_locked else "open" if obj.is_open else "closed"
            return f"the {name} ({state})"
        return f"the {name}"

    def describe(self) -> str:
        """The text rendering of the current view."""
        things: list[tuple[int, str]] = []
        walls: dict[str, int] = {}
        for right, ahead, _, cell in self.view_cells():
            if right == 0 and ahead == 0:
                continue
            if cell is None:
                continue
            if cell.type == "wall":
                if right == 0:
                    walls["ahead"] = min(walls.get("ahead", 99), ahead)
                elif ahead == 0:
                    side = "right" if right > 0 else "left"
                    walls[side] = min(walls.get(side, 99), abs(right))
                continue
            where = []
            if ahead:
                where.append(f"{steps_word(ahead)} ahead")
            if right:
                where.append(f"{steps_word(abs(right))} to your {'right' if right > 0 else 'left'}")
            things.append((ahead + abs(right), f"{self.describe_object(cell)}, "
                                               f"{' and '.join(where)}"))
        lines = []
        if things:
            lines.append("You see: " + "; ".join(t for _, t in sorted(things)) + ".")
        else:
            lines.append("You see no objects.")
        if walls:
            parts = [f"{steps_word(walls[k])} {'ahead' if k == 'ahead' else 'to your ' + k}"
                     for k in ("ahead", "left", "right") if k in walls]
            lines.append("Walls: " + ", ".join(parts) + ".")
        front = self.env.grid.get(*self.env.front_pos)
        if front is None:
            lines.append("In front of you: nothing.")
        elif front.type == "wall":
            lines.append("In front of you: a wall.")
        else:
            lines.append(f"In front of you: {self.describe_object(front)}.")
        carrying = self.env.carrying
        lines.append(f"You are carrying {self.describe_object(carrying)}." if carrying
                     else "You are not carrying anything.")
        return "\n".join(lines)

    # -- path finding -----------------------------------------------------------------------
    def state(self) -> State:
        x, y = self.env.agent_pos
        return int(x), int(y), int(self.env.agent_dir)

    def _enter_cost(self, pos: Pos, blocked: frozenset[Pos]) -> tuple[int, ...] | None:
        """Primitives needed to step into ``pos`` while facing it, or None."""
        env = self.env
        x, y = pos
        if not (0 <= x < env.width and 0 <= y < env.height) or pos in blocked:
            return None
        cell = env.grid.get(x, y)
        if cell is None:
            return (FORWARD,)
        if cell.type == "door":
            if cell.is_open:
                return (FORWARD,)
            if cell.is_locked:
                carrying = env.carrying
                if carrying is None or carrying.type != "key" or carrying.color != cell.color:
                    return None
            return (TOGGLE, FORWARD)
        return None

    def search(self, goal: Callable[[State], bool], *, start: State | None = None,
               blocked: Iterable[Pos] = ()) -> Plan | None:
        """The cheapest primitive sequence from ``start`` (the agent) to a state that
        satisfies ``goal``; None when there is none."""
        start = start or self.state()
        blocked = frozenset(blocked)
        if goal(start):
            return Plan((), start)
        tie = itertools.count()
        queue: list[tuple[int, int, State]] = [(0, next(tie), start)]
        best = {start: 0}
        back: dict[State, tuple[State, tuple[int, ...]]] = {}
        while queue:
            cost, _, state = heapq.heappop(queue)
            if cost > best.get(state, 1 << 30):
                continue
            if goal(state):
                actions: list[int] = []
                while state in back:
                    state, step = back[state][0], back[state][1]
                    actions[:0] = step
                return Plan(tuple(actions), self._end_state(start, actions))
            x, y, d = state
            moves: list[tuple[State, tuple[int, ...]]] = [
                ((x, y, (d - 1) % 4), (LEFT,)), ((x, y, (d + 1) % 4), (RIGHT,))]
            enter = self._enter_cost(front_of(state), blocked)
            if enter is not None:
                fx, fy = front_of(state)
                moves.append(((fx, fy, d), enter))
            for nxt, step in moves:
                new_cost = cost + len(step)
                if new_cost < best.get(nxt, 1 << 30):
                    best[nxt] = new_cost
                    back[nxt] = (state, step)
                    heapq.heappush(queue, (new_cost, next(tie), nxt))
        return None

    @staticmethod
    def _end_state(start: State, actions: Iterable[int]) -> State:
        x, y, d = start
        for a in actions:
            if a == LEFT:
                d = (d - 1) % 4
            elif a == RIGHT:
                d = (d + 1) % 4
            elif a == FORWARD:
                x, y, d = (*front_of((x, y, d)), d)
        return x, y, d

    def plan_face(self, pos: Pos, **kw: Any) -> Plan | None:
        """Stand next to ``pos`` and face it."""
        target = tuple(int(v) for v in pos)
        return self.search(lambda s: front_of(s) == target and (s[0], s[1]) != target, **kw)

    def plan_next_to(self, pos: Pos, **kw: Any) -> Plan | None:
        """Face an empty cell that is next to ``pos`` (to drop something there)."""
        tx, ty = (int(v) for v in pos)
        grid = self.env.grid

        def goal(s: State) -> bool:
            fx, fy = front_of(s)
            return (abs(fx - tx) + abs(fy - ty) == 1 and (fx, fy) != (s[0], s[1])
                    and grid.get(fx, fy) is None)

        return self.search(goal, **kw)

    def position(self, obj: Any) -> Pos:
        """Where ``obj`` lies (objects placed by hand in some levels have no ``cur_pos``)."""
        pos = getattr(obj, "cur_pos", None)
        if pos is not None and pos[0] >= 0 and self.env.grid.get(int(pos[0]), int(pos[1])) is obj:
            return int(pos[0]), int(pos[1])
        for x in range(self.env.width):
            for y in range(self.env.height):
                if self.env.grid.get(x, y) is obj:
                    return x, y
        if obj is self.env.carrying:
            return int(self.env.agent_pos[0]), int(self.env.agent_pos[1])
        raise ValueError(f"{obj} is not in the grid")

    def far_side(self, door: Any) -> Pos:
        """The cell beyond ``door`` from the side the agent is on."""
        dx, dy = self.position(door)
        ax, ay = self.env.agent_pos
        sides = [(dx + 1, dy), (dx - 1, dy)] if self.env.grid.get(dx, dy - 1) is not None and \
            self.env.grid.get(dx, dy - 1).type == "wall" else [(dx, dy + 1), (dx, dy - 1)]
        # The side farther from the agent is the one to reach.
        return max(sides, key=lambda p: abs(p[0] - ax) + abs(p[1] - ay))

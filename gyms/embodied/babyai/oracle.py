"""The BabyAI oracle: the mission carried out in the env's own text actions.

It reads the mission as minigrid's verifier holds it (the instruction tree, with the parts
already done) and the whole grid (privileged), and works like minigrid's BabyAI bot: take the
first instruction not yet done, go to its object, act on it; fetch the key of a locked door in
the way (opening the box that holds it if need be); move an object that blocks the way; put
down what it carries when its hands are needed. Where the bot explores to find an object it has
not seen, the oracle, knowing where the object is, walks towards it through the doors on the
way until it comes into view. It decides afresh from the env's state on every turn.

It is not minigrid's ``BabyAIBot`` run as is. The bot discovers the map by walking to unseen
cells and opening doors one by one; expressed in text actions that costs far more than the
20-turn budget (on the test seeds, up to 14 door openings and 200 primitive steps for a single
mission), and the bot cannot solve KeyInBox (it refuses to open boxes). Told the whole map up
front, the bot raised errors on about half of the test episodes: its planning assumes that it
discovers the map as it goes. So the oracle keeps the bot's way of breaking a mission down and
replaces its exploration by privileged knowledge.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from typing import Any

from colbench.env import Message, ScriptedAgent
from colbench.gyms.embodied.babyai.world import (
    DIR_VECS,
    DROP,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    TOGGLE,
    Pos,
    World,
)

PRIMITIVE_TEXT = {LEFT: "turn left", RIGHT: "turn right", FORWARD: "move forward",
                  PICKUP: "pick up", DROP: "drop", TOGGLE: "toggle"}


def pending_instructions(instr: Any) -> list[Any]:
    """The leaf instructions not yet done, in the order they must be done."""
    from minigrid.envs.babyai.core.verifier import AfterInstr, AndInstr, BeforeInstr

    if isinstance(instr, BeforeInstr):
        if instr.a_done == "success":
            return pending_instructions(instr.instr_b)
        return pending_instructions(instr.instr_a) + pending_instructions(instr.instr_b)
    if isinstance(instr, AfterInstr):
        if instr.b_done == "success":
            return pending_instructions(instr.instr_a)
        return pending_instructions(instr.instr_b) + pending_instructions(instr.instr_a)
    if isinstance(instr, AndInstr):
        out = []
        if instr.a_done != "success":
            out += pending_instructions(instr.instr_a)
        if instr.b_done != "success":
            out += pending_instructions(instr.instr_b)
        return out
    return [instr]


class Planner:
    """One decision: the next text action for the env's current state."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.game = env.game
        self.world: World = env.view
        self.grid = env.game.grid

    # -- helpers ----------------------------------------------------------------------------
    def on_floor(self, obj: Any) -> bool:
        # A description without a type ("a grey object") also matches walls, which no
        # mission means (minigrid's bot skips them too).
        if obj is self.game.carrying or obj.type == "wall":
            return False
        try:
            self.world.position(obj)
        except ValueError:
            return False
        return True

    def known(self, obj: Any) -> bool:
        return obj.type == "door" or any(o is obj for o in self.world.known_objects())

    def relaxed_path(self, goal: Pos, adjacent: bool = True) -> list[Pos] | None:
        """Cells from the agent to (next to) ``goal`` when doors and objects may be passed
        at a price: the route the oracle means to clear."""
        found = self.relaxed_search(goal, adjacent)
        return found[1] if found is not None else None

    def relaxed_search(self, goal: Pos, adjacent: bool = True) -> tuple[int, list[Pos]] | None:
        """The price and the cells of :meth:`relaxed_path`."""
        start = self.world.state()[:2]
        tie = itertools.count()
        queue = [(0, next(tie), start)]
        best = {start: 0}
        back: dict[Pos, Pos] = {}
        carrying = self.game.carrying
        while queue:
            cost, _, cell = heapq.heappop(queue)
            if cost > best[cell]:
                continue
            if (adjacent and abs(cell[0] - goal[0]) + abs(cell[1] - goal[1]) == 1) or cell == goal:
                path = [cell]
                while path[-1] in back:
                    path.append(back[path[-1]])
                return cost, path[::-1]
            for dx, dy in DIR_VECS:
                nxt = (cell[0] + dx, cell[1] + dy)
                if not (0 <= nxt[0] < self.game.width and 0 <= nxt[1] < self.game.height):
                    continue
                content = self.grid.get(*nxt)
                if content is None:
                    step = 1
                elif content.type == "wall":
                    continue
                elif content.type == "door":
                    has_key = carrying is not None and carrying.type == "key" \
                        and carrying.color == content.color
                    step = 1 if content.is_open else 2 if not content.is_locked or has_key else 8
                elif nxt == goal:
                    step = 1
                else:
                    step = 40  # an object to move out of the way: a long detour is better
                new = cost + step
                if new < best.get(nxt, 1 << 30):
                    best[nxt] = new
                    back[nxt] = cell
                    heapq.heappush(queue, (new, next(tie), nxt))
        return None

    def obstacle_on(self, path: list[Pos]) -> Any:
        """The first locked door or object on ``path`` that the agent cannot pass now."""
        carrying = self.game.carrying
        for cell in path[1:]:
            content = self.grid.get(*cell)
            if content is None or content.type == "wall":
                continue
            if content.type == "door":
                if content.is_locked and not (carrying is not None and carrying.type == "key"
                                              and carrying.color == content.color):
                    return content
                continue
            return content
        return None

    def cost(self, obj: Any) -> int:
        found = self.relaxed_search(self.world.position(obj))
        return found[0] if found is not None else 1 << 20

    def behind_door_of(self, obj: Any, color: str) -> bool:
        """Whether the way to ``obj`` passes a locked door of ``color`` (its key is no use)."""
        path = self.relaxed_path(self.world.position(obj)) or []
        for cell in path[1:]:
            content = self.grid.get(*cell)
            if content is not None and content.type == "door" and content.is_locked \
                    and content.color == color:
                return True
        return False

    def hemmed_in(self, obj: Any) -> bool:
        """Whether no free cell beside ``obj`` can be reached although nothing on the way
        needs clearing: ``obj`` itself stands in the only way in (a ball in a doorway), so
        nothing can be put next to it until it is moved."""
        if obj.type == "door":
            return False
        pos = self.world.position(obj)
        if self.world.plan_next_to(pos) is not None:
            return False
        path = self.relaxed_path(pos)
        return path is not None and self.obstacle_on(path) is None

    # -- actions ----------------------------------------------------------------------------
    def drop_somewhere(self, keep_clear: set[Pos]) -> str:
        """Put down what is carried where it blocks nothing that matters."""
        game = self.game
        doors = [self.world.position(o) for o in self.world.known_objects() if o.type == "door"]
        avoid = set(keep_clear)
        for dx, dy in doors:
            avoid.update({(dx + 1, dy), (dx - 1, dy), (dx, dy + 1), (dx, dy - 1)})
        x, y, d = self.world.state()

        def free(direction: int) -> bool:
            vx, vy = DIR_VECS[direction]
            cell = (x + vx, y + vy)
            return self.grid.get(*cell) is None and cell not in avoid

        if free(d):
            return "drop"
        if free((d - 1) % 4):
            return "turn left"
        if free((d + 1) % 4):
            return "turn right"
        if free((d + 2) % 4):
            return "turn left"
        # Every neighbour matters (a corridor): carry it on to where there is room.
        front = self.grid.get(*game.front_pos)
        if front is None or front.can_overlap():
            return "move forward"
        return "turn left"

    def free_hands(self, target: Any | None) -> str:
        """Put down what is carried, but first use it on the locked door it opens if that door
        stands between the agent and ``target``."""
        carrying = self.game.carrying
        path = self.relaxed_path(self.world.position(target)) if target is not None else None
        if carrying is not None and carrying.type == "key":
            # A key opens its locked door before it is put down: that door may be the way to
            # the target, or to the key of a door on that way.
            doors = [o for o in self.world.known_objects() if o.type == "door"
                     and o.is_locked and o.color == carrying.color]
            reachable = [d for d in doors if self.world.plan_face(self.world.position(d))]
            if reachable:
                return self.reach(min(reachable, key=self.cost), "toggle")
        return self.drop_somewhere(set(path or []))

    def fetch_key(self, color: str, keep_clear: set[Pos], depth: int = 0) -> str:
        carrying = self.game.carrying
        if carrying is not None:
            return self.drop_somewhere(keep_clear)
        keys = [o for o in self.all_objects() if o.type == "key" and o.color == color
                and not self.behind_door_of(o, color)]
        if keys:
            return self.reach(min(keys, key=self.cost), "pick up", depth)
        boxes = [o for o in self.all_objects() if o.type == "box" and o.contains is not None
                 and o.contains.type == "key" and o.contains.color == color
                 and not self.behind_door_of(o, color)]
        if boxes:
            return self.reach(min(boxes, key=self.cost), "toggle", depth)
        return "check available actions"  # no key anywhere: nothing sensible to do

    def all_objects(self) -> list[Any]:
        out = []
        for x in range(self.game.width):
            for y in range(self.game.height):
                cell = self.grid.get(x, y)
                if cell is not None and cell.type in ("ball", "box", "key"):
                    out.append(cell)
        return out

    def reach(self, obj: Any, verb: str, depth: int = 0) -> str:
        """The next action towards ``verb obj`` (go to, pick up, toggle, put next to)."""
        world = self.world
        if depth > 6:  # obstacles behind obstacles: give up planning, look around
            return "turn left"
        pos = world.position(obj)
        plan = world.plan_next_to(pos) if verb == "put next to" else world.plan_face(pos)
        if plan is not None and self.known(obj):
            return f"{verb} {world.name(obj)}"
        path = self.relaxed_path(pos)
        if path is None:
            return "check available actions"
        if plan is None:
            obstacle = self.obstacle_on(path)
            if obstacle is not None and obstacle.type == "door":
                return self.fetch_key(obstacle.color, set(path), depth + 1)
            if obstacle is not None:
                if self.game.carrying is not None:
                    return self.drop_somewhere(set(path))
                return self.reach(obstacle, "pick up", depth + 1)
        # Not seen yet: walk towards it, through the doors on the way.
        for cell in path[1:]:
            content = self.grid.get(*cell)
            if content is not None and content.type == "door":
                beyond = world.far_side(content)
                if beyond in path:
                    blocker = self.grid.get(*beyond)
                    if blocker is None:
                        return f"go through {world.name(content)}"
                    if not content.is_open:  # open it to see what stands behind
                        return f"toggle {world.name(content)}"
                    if self.game.carrying is not None:
                        return self.drop_somewhere(set(path))
                    return self.reach(blocker, "pick up", depth + 1)
                break
        route = world.plan_face(pos) or world.search(lambda s: (s[0], s[1]) == path[-1])
        if route is not None and route.actions:
            return PRIMITIVE_TEXT[route.actions[0]]
        return "turn left"

    def next_action(self) -> str:
        game = self.game
        pending = pending_instructions(game.instrs)
        if not pending:
            return "check available actions"
        from minigrid.envs.babyai.core.verifier import (
            GoToInstr,
            OpenInstr,
            PickupInstr,
            PutNextInstr,
        )

        instr = pending[0]
        carrying = game.carrying
        if isinstance(instr, GoToInstr):
            targets = [o for o in instr.desc.obj_set if self.on_floor(o)]
            if not targets:
                return self.drop_somewhere(set())
            return self.reach(min(targets, key=self.cost), "go to")
        if isinstance(instr, OpenInstr):
            door = min((o for o in instr.desc.obj_set if o.type == "door"), key=self.cost)
            if door.is_locked and not (carrying is not None and carrying.type == "key"
                                       and carrying.color == door.color):
                return self.fetch_key(door.color, set(self.relaxed_path(
                    self.world.position(door)) or []))
            return self.reach(door, "toggle")
        if isinstance(instr, PickupInstr):
            targets = [o for o in instr.desc.obj_set if self.on_floor(o)]
            if carrying is not None:
                return self.free_hands(min(targets, key=self.cost) if targets else None)
            if not targets:
                return "check available actions"
            return self.reach(min(targets, key=self.cost), "pick up")
        if isinstance(instr, PutNextInstr):
            movers = [o for o in instr.desc_move.obj_set]
            fixed = [o for o in instr.desc_fixed.obj_set if self.on_floor(o) or o.type == "door"]
            if carrying is not None and any(carrying is m for m in movers):
                anchors = [o for o in fixed if o is not carrying]
                placeable = [o for o in anchors if not self.hemmed_in(o)]
                if not placeable:  # put it down, then move the anchor out of the way
                    return self.drop_somewhere(set())
                return self.reach(min(placeable, key=self.cost), "put next to")
            movable = [m for m in movers if self.on_floor(m)]
            if carrying is not None:
                return self.free_hands(min(movable, key=self.cost) if movable else None)
            # Clear the way to the anchor while the hands are free.
            placeable = [o for o in fixed if not self.hemmed_in(o)]
            if not placeable:
                return self.reach(min(fixed, key=self.cost), "pick up")
            anchor = min(placeable, key=self.cost)
            route = self.relaxed_path(self.world.position(anchor)) or []
            obstacle = self.obstacle_on(route)
            if obstacle is not None and obstacle.type == "door":
                return self.fetch_key(obstacle.color, set(route))
            if obstacle is not None and not any(obstacle is m for m in movers):
                return self.reach(obstacle, "pick up")
            return self.reach(min(movable, key=self.cost), "pick up")
        return "check available actions"


class BabyAIOracle(ScriptedAgent):
    """Privileged planner for BabyAI in the env's text actions (see the module docstring)."""

    def act(self, messages: Sequence[Message]) -> str:
        return f"Action: {Planner(self.env.unwrapped).next_action()}"

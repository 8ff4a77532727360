"""Run untrusted Python (an agent's answer) safely and cheaply.

>>> from colbench.sandbox import Sandbox, SandboxLimits
>>> with Sandbox(workers=2, limits=SandboxLimits(wall_seconds=2)) as sandbox:
...     verdict = sandbox.run_calls("def f(x):\\n    return x * 2\\n", ["f(2)", "f('a')"])
>>> verdict.status, [r.value for r in verdict.results]
('ok', [4, 'aa'])

The code never runs in the calling process: a pool of warm worker processes forks one
limited, isolated child per job (see :class:`Sandbox`). Values come back through a tagged
JSON encoding (never pickle); :func:`values_equal` is how the scorer compares them. A value
that would be costly to decode or compare (an int of a million digits, a set whose members
share one hash) fails its call with the reason instead: the child checks the bounds before it
sends, and the evaluator again as it decodes (see ``_wire`` and :class:`SandboxLimits`).

What isolation a pool gives is said in one record (:func:`describe_isolation`: a level,
what is in force, what is missing), which an env that runs code here reports among its
facts (``describe()["isolation"]``), so that a run prints it, records it in
``summary.json`` and can require ``full`` (:func:`check_isolation`).
"""

from colbench.sandbox._isolation import (
    ISOLATION_LEVELS,
    check_isolation,
    describe_isolation,
    isolation_line,
)
from colbench.sandbox._pool import UNSAFE_ENV, Sandbox
from colbench.sandbox._shared import get_sandbox, shared_isolation
from colbench.sandbox._types import (
    REFERENCE_BLOCKLIST,
    CallResult,
    SandboxLimits,
    Verdict,
    VerdictStatus,
    values_equal,
)

__all__ = [
    "ISOLATION_LEVELS", "REFERENCE_BLOCKLIST", "UNSAFE_ENV", "CallResult", "Sandbox",
    "SandboxLimits", "Verdict", "VerdictStatus", "check_isolation", "describe_isolation",
    "get_sandbox", "isolation_line", "shared_isolation", "values_equal",
]

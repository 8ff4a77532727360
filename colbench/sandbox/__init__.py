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
"""

from colbench.sandbox._pool import UNSAFE_ENV, Sandbox
from colbench.sandbox._shared import get_sandbox
from colbench.sandbox._types import (
    REFERENCE_BLOCKLIST,
    CallResult,
    SandboxLimits,
    Verdict,
    VerdictStatus,
    values_equal,
)

__all__ = [
    "REFERENCE_BLOCKLIST", "UNSAFE_ENV", "CallResult", "Sandbox", "SandboxLimits", "Verdict",
    "VerdictStatus", "get_sandbox", "values_equal",
]

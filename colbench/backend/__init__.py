"""ColBench Backend Programming: collaborative Python coding scored by hidden unit tests.

The env is ``colbench/Backend-v0`` (:class:`colbench.backend.env.BackendEnv`). Its simulated
humans are registered as ``backend/builtin`` and ``backend/model`` in
``colbench.registry.simulators``; the env takes ``simulator="builtin"`` or a model spec.
"""

from colbench.registry import simulators

simulators.register("backend/builtin", "colbench.backend.simulator:BuiltinCodeSimulator")
simulators.register("backend/model", "colbench.backend.simulator:ModelCodeSimulator")

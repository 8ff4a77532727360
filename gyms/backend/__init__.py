"""ColBench Backend Programming: collaborative Python coding scored by hidden unit tests.

The env is ``colbench/Backend-v0`` (:class:`colbench.gyms.backend.env.BackendEnv`; v1's
program space is :mod:`.programs`), declared in the suite's manifest (``colbench.gyms.suites``).
It plays the protocols of :mod:`.protocols` (colbench's own and ``sweet-rl``), takes
``simulator="builtin"`` (the deterministic simulated human of :mod:`.simulator`) or a model
spec for the model-backed one, and has the scripted agents of :mod:`.oracle` (the oracle and
the generator check, which read hidden data) and :mod:`.baselines` (the blind baselines).
"""

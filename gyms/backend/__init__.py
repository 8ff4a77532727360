"""ColBench Backend Programming: collaborative Python coding scored by hidden unit tests.

The env is ``colbench/Backend-v0`` (:class:`colbench.gyms.backend.env.BackendEnv`), declared
in the ``colbench.envs`` entry points; it takes ``simulator="builtin"`` (the deterministic
simulated human of :mod:`.simulator`) or a model spec for the model-backed one.
"""

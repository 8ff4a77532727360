"""Backend-v1: tasks whose hidden functions are programs composed from a typed vocabulary of
parts (:mod:`.parts`), in names drawn from a large vocabulary (:mod:`.vocabulary`), with a
simulated human that tells a part's facts only when asked about that part
(:mod:`.simulator`). The env is ``colbench/Backend-v1`` (:class:`.env.BackendV1Env`)."""

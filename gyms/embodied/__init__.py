"""Embodied gyms: BabyAI on minigrid and ScienceWorld, as text environments.

Needs the ``[embodied]`` extra (``minigrid``, ``scienceworld``; ScienceWorld also needs Java 17).
Import the env modules directly (``colbench.gyms.embodied.babyai.env``,
``colbench.gyms.embodied.sciworld``): each imports its own dependency only when used.
"""

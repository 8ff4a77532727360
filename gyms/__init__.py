"""colbench's long-horizon gyms (web, crafting, embodied). Each registers its env ids through
the ``colbench.envs`` entry points declared in pyproject.toml."""

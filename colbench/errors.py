"""Exception types shared by every part of colbench."""

from __future__ import annotations


class ColbenchError(Exception):
    """Base class for errors that colbench raises on purpose."""


class ConfigError(ColbenchError, ValueError):
    """Bad input from the user: a spec, a flag, a file. The message names what was wrong."""


class MissingExtraError(ColbenchError, ImportError):
    """A part needs an optional dependency group that is not installed.

    Parameters
    ----------
    part : str
        What needs it, as the message names it (``colbench/BabyAI-v0``).
    extra : str
        The colbench extra that installs it (``embodied``).
    missing : str or None
        The module that failed to import, where known.
    """

    def __init__(self, part: str, extra: str, missing: str | None = None) -> None:
        detail = f" (could not import {missing!r})" if missing else ""
        super().__init__(
            f"{part} needs the optional dependencies of colbench[{extra}]{detail}; "
            f"install them with: pip install 'colbench[{extra}]'"
        )
        self.extra = extra


class EnvironmentFailure(ColbenchError):
    """The environment itself failed (a sandbox that could not start, a browser crash).

    The runner records such an episode with status ``error``, retries it a bounded number of
    times and never scores it as the agent's failure.
    """


class ModelFailure(ColbenchError):
    """The model backend failed after its retries (server down, malformed replies)."""

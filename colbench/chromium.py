"""Finding Debian's Chromium and its driver, for every part that drives a browser.

Two browser stacks use it: Selenium in the frontend suite's renderer (Chromium and
chromedriver) and Playwright in the web gym (Chromium only). It sits in the core because both
use it, so that one search and one error serve both.

The search, for each binary: its environment variable when set (``COLBENCH_CHROMIUM``,
``COLBENCH_CHROMEDRIVER``; it must name an existing file, else the error says the variable
is wrong rather than falling back silently); then the names on ``PATH`` (``chromium``,
``chromium-browser``, then Google's ``google-chrome`` and ``chrome``; ``chromedriver``); then
where Debian installs them, for a ``PATH`` that lacks ``/usr/bin``.

What is missing raises :class:`ChromiumNotFound`, which names the Debian packages to install
(``chromium``, ``chromium-driver``) and the variables to set. It is both a
:class:`~colbench.errors.ConfigError` (the machine lacks a dependency: a user's fix) and an
:class:`~colbench.errors.EnvironmentFailure` (an episode that meets it is never the agent's
failure), so callers written against either keep working.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from colbench.errors import ConfigError, EnvironmentFailure

__all__ = ["ChromiumNotFound", "find_chromedriver", "find_chromium",
           "find_chromium_and_driver"]


class ChromiumNotFound(ConfigError, EnvironmentFailure):
    """Chromium or chromedriver is not installed where colbench looks (or an override names a
    file that does not exist)."""


@dataclass(frozen=True)
class _Binary:
    """One program to find: what it is called, and how a user provides it."""

    label: str
    variable: str
    path_names: tuple[str, ...]
    debian_paths: tuple[str, ...]
    debian_package: str


_CHROMIUM = _Binary("chromium", "COLBENCH_CHROMIUM",
                    ("chromium", "chromium-browser", "google-chrome", "chrome"),
                    ("/usr/bin/chromium", "/usr/lib/chromium/chromium"), "chromium")
_CHROMEDRIVER = _Binary("chromedriver", "COLBENCH_CHROMEDRIVER", ("chromedriver",),
                        ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"),
                        "chromium-driver")


def _locate(binary: _Binary) -> str | None:
    """The binary's path, or None when it is nowhere. A set variable that names no file is
    an error of its own: silently using another browser would hide the user's mistake."""
    override = os.environ.get(binary.variable)
    if override:
        if not os.path.isfile(override):
            raise ChromiumNotFound(f"{binary.variable}={override!r} is not a file; point it at "
                                   f"the {binary.label} binary, or unset it to use Debian's")
        return override
    for name in binary.path_names:
        found = shutil.which(name)
        if found:
            return found
    return next((p for p in binary.debian_paths if os.path.isfile(p)), None)


def _find(binaries: tuple[_Binary, ...], purpose: str) -> list[str]:
    """Every binary's path, or one error naming all that are missing."""
    paths = [_locate(binary) for binary in binaries]
    missing = [b for b, path in zip(binaries, paths, strict=True) if path is None]
    if missing:
        names = " and ".join(b.label for b in missing)
        packages = " ".join(b.debian_package for b in missing)
        variables = " and ".join(b.variable for b in missing)
        raise ChromiumNotFound(
            f"{purpose} needs {names}, which {'was' if len(missing) == 1 else 'were'} not "
            f"found. On Debian/Ubuntu: apt-get install {packages}; or point {variables} at "
            f"the {'binary' if len(missing) == 1 else 'binaries'}")
    return [p for p in paths if p is not None]


def find_chromium(purpose: str = "colbench") -> str:
    """The Chromium binary to drive. ``purpose`` names who needs it, in the error."""
    return _find((_CHROMIUM,), purpose)[0]


def find_chromedriver(purpose: str = "colbench") -> str:
    """The chromedriver binary (Selenium's link to Chromium)."""
    return _find((_CHROMEDRIVER,), purpose)[0]


def find_chromium_and_driver(purpose: str = "colbench") -> tuple[str, str]:
    """Chromium and chromedriver together, with one error naming every one missing."""
    chromium, driver = _find((_CHROMIUM, _CHROMEDRIVER), purpose)
    return chromium, driver

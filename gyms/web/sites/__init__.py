"""The self-hosted sites of the web gym. Each sub-package is one Flask site with a ``seed``
module (schema and deterministic data), an ``app`` module (``create_app``: one Flask
blueprint per area of the site) and a ``tasks`` module (a table of task kinds)."""

from __future__ import annotations

import importlib
from types import ModuleType

#: Every site, by the name tasks use.
SITE_NAMES: tuple[str, ...] = ("shop", "forum", "admin")

#: The user each site's episodes start signed in as (its row id in the ``users`` table).
START_USER: dict[str, int] = {"shop": 1, "forum": 1, "admin": 1}


def site_module(site: str, part: str) -> ModuleType:
    """``colbench.gyms.web.sites.<site>.<part>``, with a clear error for unknown sites."""
    if site not in SITE_NAMES:
        raise ValueError(f"unknown web site {site!r}; the sites are {', '.join(SITE_NAMES)}")
    return importlib.import_module(f"{__name__}.{site}.{part}")

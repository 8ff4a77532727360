"""The backend task families: kinds of coding request, each with hidden parameters.

``FAMILIES`` lists every family, sorted by name; :func:`get_family` finds one by name. A family
is public knowledge (its code shape, its questions, the domain of each parameter); the values a
task draws for it are the hidden details. See :mod:`colbench.gyms.backend.families.base`.
"""

from __future__ import annotations

from colbench.gyms.backend.families import (  # noqa: F401 - importing registers the families
    civic,
    commerce,
    finance,
    health,
    logistics,
    people,
    text,
)
from colbench.gyms.backend.families.base import (
    DETAIL_KINDS,
    KINDS,
    Family,
    Param,
    Values,
    registered,
)

FAMILIES: tuple[Family, ...] = tuple(f for _, f in sorted(registered().items()))
_BY_NAME = {f.name: f for f in FAMILIES}


def get_family(name: object) -> Family | None:
    """The family called ``name``, or None (official tasks have no family)."""
    return _BY_NAME.get(name) if isinstance(name, str) else None


__all__ = ["DETAIL_KINDS", "FAMILIES", "KINDS", "Family", "Param", "Values", "get_family"]

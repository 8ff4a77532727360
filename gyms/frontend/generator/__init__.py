"""The page generator: seeded pages composed from varied sections, palettes, type and copy,
styled with Tailwind classes, each with a short vague description."""

from colbench.gyms.frontend.generator.compose import MIDDLE_KINDS, compose_page
from colbench.gyms.frontend.generator.describe import describe_page
from colbench.gyms.frontend.generator.edits import EDIT_KINDS, Edit, apply_edit
from colbench.gyms.frontend.generator.page import KIND_LABELS, PageSpec, SectionSpec, Style

__all__ = ["EDIT_KINDS", "KIND_LABELS", "MIDDLE_KINDS", "Edit", "PageSpec", "SectionSpec",
           "Style", "apply_edit", "compose_page", "describe_page"]

"""Reports on finished (or interrupted) runs: a text table and an HTML page.

``colbench report DIR... [--html FILE]`` is the command; this package is its library::

    from colbench.report import load_run, write_html
    write_html([load_run("runs/a"), load_run("runs/b")], "report.html")

The page's renders and long texts go into ``report_assets/`` beside it (relative links, so
the two move together); it breaks results down by the tasks' family or level when their
metadata names one.

Suites add to every episode's view with :func:`register_episode_section`.
"""

from colbench.report._html import (
    EpisodeSection,
    ReportContext,
    comparison_section,
    register_episode_section,
    render_html,
    write_html,
)
from colbench.report._runs import RunData, load_run

__all__ = ["EpisodeSection", "ReportContext", "RunData", "comparison_section", "load_run",
           "register_episode_section", "render_html", "write_html"]

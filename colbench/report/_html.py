"""One HTML page for one or more runs, with its images in a folder beside it.

The page holds the summary table, breakdowns per task family or level (when the tasks carry
one), every metric of every run, and every episode's dialogue, each episode collapsible, with
filters by run, status, outcome and task id. CSS and script are inline; images are files in
``<page stem>_assets/`` referenced by relative URLs (see :mod:`colbench.report._assets`),
never ``data:`` URIs, so the page grows by a few hundred bytes per image, not by the image,
and a Content-Security-Policy forbids loading anything else. Every piece of text from a run
is escaped.

Images: paths in a turn's ``info["images"]`` are shown under that turn, each a link to the
full-size file. An episode whose metrics, record or last turn info carry ``target_image`` and
``final_image`` gets the two side by side (the frontend suite's "target vs final render").
Suites that need more register an :data:`EpisodeSection` with
:func:`register_episode_section`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from colbench._version import __version__
from colbench.protocols import DEFAULT_PROTOCOL
from colbench.records import EpisodeRecord, MetricSummary
from colbench.report._assets import IMAGE_SUFFIXES, ReportAssets
from colbench.report._breakdown import breakdown_section, esc
from colbench.report._runs import RunData

#: Longest text shown whole in the page; longer ones (a frontend agent's HTML, say) show
#: their first :data:`PREVIEW_CHARS` and link the whole text, kept in the assets folder.
INLINE_TEXT_CHARS = 1000
PREVIEW_CHARS = 160

#: Images only from the page's own place (its assets folder): ``'self'`` covers a page
#: served over HTTP and, in Chromium, one opened from disk (a test checks the latter).
CSP = ("default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'")


class ReportContext:
    """What an episode section needs: the run being rendered and the page's image folder
    (``None`` when the page is rendered to a string only: images are then named, not
    shown)."""

    def __init__(self, run: RunData, assets: ReportAssets | None = None) -> None:
        self.run = run
        self.assets = assets

    def resolve(self, path: str | Path) -> Path:
        """A path from a record; relative paths are relative to the run directory."""
        p = Path(path)
        return p if p.is_absolute() else self.run.path / p

    def image(self, path: str | Path, caption: str | None = None) -> str:
        """A ``<figure>`` showing the image from the assets folder (a link to the full-size
        file), or a note saying why it is not shown."""
        resolved = self.resolve(path)
        label = esc(caption) if caption is not None else esc(Path(path).name)
        return f'<figure>{self._picture(resolved)}<figcaption>{label}</figcaption></figure>'

    def text(self, text: str, css_class: str = "") -> str:
        """``text`` in a ``<pre>``; past :data:`INLINE_TEXT_CHARS` only its start, with a
        link to the whole text in the assets folder (when the page has one)."""
        cls = f' class="{css_class}"' if css_class else ""
        if len(text) <= INLINE_TEXT_CHARS or self.assets is None:
            return f"<pre{cls}>{esc(text)}</pre>"
        url = self.assets.add_text(text)
        return (f"<pre{cls}>{esc(text[:PREVIEW_CHARS])}…</pre>"
                f'<a class="more" href="{esc(url)}">whole text ({len(text):,} characters)</a>')

    def _picture(self, path: Path) -> str:
        suffix = path.suffix.lower()
        if suffix not in IMAGE_SUFFIXES:
            return f'<p class="note">not an image type this page shows: {esc(path)}</p>'
        if self.assets is None:
            return (f'<p class="note">image not copied (page rendered without a folder): '
                    f'{esc(path)}</p>')
        try:
            url = self.assets.add(path)
        except OSError:
            return f'<p class="note">image missing: {esc(path)}</p>'
        img = f'<img src="{esc(url)}" alt="" loading="lazy">'  # the caption names it
        if suffix == ".svg":  # opened on its own an SVG could run script: shown, not linked
            return img
        return f'<a href="{esc(url)}">{img}</a>'


#: A section added to every episode: returns HTML (escaped by the section) or "" for none.
EpisodeSection = Callable[[EpisodeRecord, ReportContext], str]
_SECTIONS: list[EpisodeSection] = []


def register_episode_section(section: EpisodeSection) -> EpisodeSection:
    """Add a section to every episode of every report (usable as a decorator)."""
    if section not in _SECTIONS:
        _SECTIONS.append(section)
    return section


def comparison_section(record: EpisodeRecord, ctx: ReportContext) -> str:
    """Target and final renders side by side, when the episode names them."""
    target, final = record.lookup("target_image"), record.lookup("final_image")
    if not target and not final:
        return ""
    figures = []
    if target:
        figures.append(ctx.image(target, "target"))
    if final:
        figures.append(ctx.image(final, "final"))
    return f'<div class="compare">{"".join(figures)}</div>'


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _pct(metric: MetricSummary | None) -> str:
    if metric is None:
        return "–"
    lo, hi = metric.ci95
    return f"{100 * metric.mean:.1f} <small>[{100 * lo:.1f}, {100 * hi:.1f}]</small>"


def _num(metric: MetricSummary | None) -> str:
    if metric is None:
        return "–"
    lo, hi = metric.ci95
    return f"{metric.mean:.3g} <small>[{lo:.3g}, {hi:.3g}]</small>"


def _message(kind: str, who: str, text: str | None, ctx: ReportContext, extra: str = "") -> str:
    body = ctx.text(text) if text else '<pre><span class="note">(empty)</span></pre>'
    return f'<div class="msg {kind}"><div class="who">{esc(who)}</div>{body}{extra}</div>'


def render_episode(record: EpisodeRecord, run_index: int, ctx: ReportContext,
                   shared_system_prompt: str | None = None) -> str:
    """One episode as a collapsed ``<details>``; its system prompt is left out when it is
    ``shared_system_prompt`` (shown once for the whole run)."""
    outcome = record.outcome
    facts = [f"trial {record.trial}", outcome]
    if "score" in record.metrics:
        facts.append(f"score {_fmt(record.metrics['score'])}")
    facts.append(f"{len(record.turns)} turn(s)")
    if record.failure_kind == "env":
        facts.append(f"{record.attempts} attempt(s)")
    if record.seconds is not None:
        facts.append(f"{record.seconds:.2f} s")
    parts = [
        f'<details class="episode" data-run="{run_index}" data-status="{esc(record.status)}" '
        f'data-outcome="{outcome}" data-task="{esc(record.task_id)}">',
        f'<summary><span class="badge {outcome}">{outcome}</span> '
        f'<b>{esc(record.task_id)}</b> <span class="facts">{esc(" · ".join(facts))}</span>'
        '</summary><div class="body">',
    ]
    if record.system_prompt and record.system_prompt != shared_system_prompt:
        parts.append('<details class="system"><summary>system prompt</summary>'
                     f'{ctx.text(record.system_prompt)}</details>')
    for index, turn in enumerate(record.turns):
        if index == 0:
            parts.append(_message("env", "env", turn.observation, ctx))
        parts.append(_message("agent", f"agent · turn {index + 1}", turn.action, ctx))
        reply = turn.next_observation
        if reply is None and index + 1 < len(record.turns):
            reply = record.turns[index + 1].observation
        images = turn.info.get("images") or []
        gallery = ""
        if images:
            gallery = ('<div class="images">'
                       + "".join(ctx.image(p) for p in images if isinstance(p, (str, Path)))
                       + "</div>")
        if reply is not None or gallery:
            parts.append(_message("env", f"env · reward {_fmt(turn.reward)}", reply, ctx,
                                  gallery))
    for section in (comparison_section, *_SECTIONS):
        parts.append(section(record, ctx))
    if record.final_answer is not None:
        if record.turns and record.final_answer == record.turns[-1].action:
            # Often the last message itself (a frontend page): not shown twice.
            parts.append('<h4>final answer</h4><p class="note">the agent\'s last message '
                         f"(turn {len(record.turns)})</p>")
        else:
            parts.append(f'<h4>final answer</h4>{ctx.text(record.final_answer, "answer")}')
    if record.metrics:
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(_fmt(v))}</td></tr>"
                       for k, v in record.metrics.items())
        parts.append(f'<table class="metrics">{rows}</table>')
    if record.error:
        # Whole, even when long: a traceback is read where it stands, and errors are few.
        parts.append(f'<h4>error</h4><pre class="error">{esc(record.error)}</pre>')
    parts.append("</div></details>")
    return "".join(parts)


def _protocol_badge(protocol: str) -> str:
    """A named protocol beside the env (none for colbench's own): runs of different
    protocols are not comparable, and the reader must see which one a row played."""
    if protocol == DEFAULT_PROTOCOL:
        return ""
    return f' <span class="badge protocol">protocol {esc(protocol)}</span>'


def _summary_table(runs: Sequence[RunData]) -> str:
    head = ("<tr><th>run</th><th>env</th><th>model</th><th>task set</th>"
            '<th title="scored, model errors included">episodes</th>'
            '<th title="the environment failed: not scored">env errors</th>'
            '<th title="the model failed: scored 0">model errors</th>'
            "<th>success % [95% CI]</th><th>score % [95% CI]</th>"
            "<th>turns</th><th>questions</th></tr>")
    rows = []
    for run in runs:
        s = run.summary
        turns = run.mean_turns()
        questions = run.mean_metric("questions")
        label = esc(run.label) + (' <span class="badge partial">partial</span>'
                                  if run.partial else "")
        rows.append(
            f"<tr><td>{label}</td><td>{esc(s.env)}{_protocol_badge(s.protocol)}</td>"
            f"<td>{esc(s.model)}</td>"
            f'<td title="{esc(s.task_set.hash)}">{esc(s.task_set.name)}</td>'
            f"<td>{s.counts.ok}</td><td>{s.counts.env_errors}</td>"
            f"<td>{s.counts.model_errors}</td>"
            f"<td>{_pct(s.metrics.get('success_rate'))}</td>"
            f"<td>{_pct(s.metrics.get('score'))}</td>"
            f"<td>{'–' if turns is None else f'{turns:.2f}'}</td>"
            f"<td>{'–' if questions is None else f'{questions:.2f}'}</td></tr>")
    return f'<table class="summary">{head}{"".join(rows)}</table>'


def _metrics_table(runs: Sequence[RunData]) -> str:
    names = sorted({name for run in runs for name in run.summary.metrics})
    if not names:
        return ""
    head = "<tr><th>metric</th>" + "".join(f"<th>{esc(r.label)}</th>" for r in runs) + "</tr>"
    rows = "".join(
        f"<tr><th>{esc(name)}</th>"
        + "".join(f"<td>{_num(r.summary.metrics.get(name))}</td>" for r in runs) + "</tr>"
        for name in names)
    return ('<details class="all-metrics"><summary>every metric (mean [95% CI])</summary>'
            f'<table class="summary">{head}{rows}</table></details>')


def _filters(runs: Sequence[RunData]) -> str:
    run_options = "".join(f'<option value="{i}">{esc(r.label)}</option>'
                          for i, r in enumerate(runs))
    return (
        '<form id="filters" onsubmit="return false">'
        f'<label>run <select name="run"><option value="all">all</option>{run_options}'
        '</select></label>'
        '<label>status <select name="status"><option value="all">all</option>'
        '<option value="ok">ok</option><option value="error">error</option></select></label>'
        '<label>outcome <select name="outcome"><option value="all">all</option>'
        '<option value="success">success</option><option value="failure">failure</option>'
        '<option value="model-error">model error</option>'
        '<option value="env-error">env error</option></select></label>'
        '<label>task <input name="task" type="search" placeholder="task id contains"></label>'
        '<button type="button" id="expand">expand shown</button>'
        '<button type="button" id="collapse">collapse all</button>'
        '<span id="shown"></span></form>')


def _shared_system_prompt(records: Sequence[EpisodeRecord]) -> str | None:
    """The system prompt every episode of a run had, if they all had the same one: shown
    once instead of once per episode."""
    prompts = {record.system_prompt for record in records}
    if len(prompts) == 1 and len(records) > 1:
        return prompts.pop()
    return None


def _asset(name: str) -> str:
    return resources.files("colbench.report").joinpath(name).read_text(encoding="utf-8")


def render_html(runs: Sequence[RunData], title: str = "colbench report",
                assets: ReportAssets | None = None) -> str:
    """The report page for ``runs`` as one HTML string; images go into ``assets`` (without
    it they are named, not shown: :func:`write_html` gives the page its folder)."""
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    episodes = sum(len(r.records) for r in runs)
    body = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{_asset('report.css')}</style></head><body>",
        f"<header><h1>{esc(title)}</h1><p class=\"note\">{len(runs)} run(s), {episodes} "
        f"episode(s); generated {esc(generated)} by colbench {esc(__version__)}</p></header>",
        '<section id="summary"><h2>Summary</h2>', _summary_table(runs), _metrics_table(runs),
        breakdown_section(runs), "</section>",
        '<section id="episodes"><h2>Episodes</h2>', _filters(runs),
    ]
    for index, run in enumerate(runs):
        ctx = ReportContext(run, assets)
        body.append(f'<section class="run" data-run="{index}"><h3>{esc(run.label)} '
                    f'<small>{esc(run.summary.env)} · {esc(run.summary.model)}</small></h3>')
        shared = _shared_system_prompt(run.records)
        if shared:
            body.append('<details class="system"><summary>system prompt (every episode of '
                        f'this run)</summary>{ctx.text(shared)}</details>')
        if not run.records:
            body.append('<p class="note">no episodes</p>')
        body.extend(render_episode(record, index, ctx, shared) for record in run.records)
        body.append("</section>")
    body += ["</section>", f"<script>{_asset('report.js')}</script>", "</body></html>"]
    return "\n".join(body)


def write_html(runs: Sequence[RunData], path: str | Path, title: str = "colbench report"
               ) -> Path:
    """Write the report page to ``path`` (atomically) with its images in ``<stem>_assets/``
    beside it, and return the path.

    Rebuilding over an earlier page replaces it and removes the images it no longer shows;
    files this function did not write are never touched (a foreign folder in the way is
    refused with :class:`~colbench.errors.ConfigError` before anything is written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    assets = ReportAssets(path)
    try:
        page = render_html(runs, title, assets)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(path)
    finally:
        assets.close()
    assets.finish()
    return path

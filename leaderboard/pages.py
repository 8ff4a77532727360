"""The HTML pages: the boards, one board per env with sortable columns, and a submission's
page. A board shows its verified entries unless ``?status=all`` (or a list of statuses, as on
the API) asks for the rest too; every row is labelled with its status. Templates autoescape everything (nothing a submitter wrote is marked safe), and the
Content-Security-Policy set in ``app.py`` forbids scripts altogether: sorting is done by the
server through links, and the chart is inline SVG."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, abort, make_response, render_template, request, url_for

from colbench.leaderboard import queries, winrates
from colbench.leaderboard.app import state
from colbench.leaderboard.challenge import challenge_name
from colbench.leaderboard.charts import histogram
from colbench.leaderboard.tokens import sent_by_owner

pages = Blueprint("pages", __name__)

COLUMNS = (("rank", "Rank"), ("model", "Model"), ("organization", "Organisation"),
           ("success", "Success rate [95% CI]"), ("score", "Score [95% CI]"),
           ("verified", "Status"), ("date", "Date"), ("version", "colbench"))


@pages.get("/")
def index() -> Any:
    return render_template("index.html", boards=queries.boards(state().db))


@pages.get("/boards/<path:env>")
def board_page(env: str) -> Any:
    split = request.args.get("split", "test")
    protocol = request.args.get("protocol", queries.DEFAULT_PROTOCOL)
    sort = request.args.get("sort", "rank")
    direction = request.args.get("dir")
    try:
        # ?verified=1 is what the verified-only link used to say; it still means that.
        statuses = queries.parse_statuses(request.args.get("status"), queries.PAGE_STATUSES)
    except ValueError as exc:
        abort(400, description=str(exc))
    try:
        page = int(request.args.get("page", "1"))
    except ValueError:
        page = 1
    result = queries.board(state().db, env, split, sort=sort, direction=direction, page=page,
                           page_size=state().settings.page_size, statuses=statuses,
                           protocol=protocol)
    rates = winrates.for_board(state().db, state().settings, env, split, protocol, result.rows)
    splits = queries.splits(state().db, env)
    counts = queries.status_counts(state().db, env, split, protocol)

    def board_url(shown: tuple[str, ...] = statuses, **args: Any) -> str:
        """This board's URL with ``args``, keeping its protocol and filter."""
        if protocol != queries.DEFAULT_PROTOCOL:
            args["protocol"] = protocol
        if shown != queries.PAGE_STATUSES:
            args["status"] = "all" if shown == queries.LISTED else ",".join(shown)
        return url_for("pages.board_page", env=env, split=args.pop("split", split), **args)

    def sort_url(column: str) -> str:
        if column == result.sort:
            new_dir = "asc" if result.direction == "desc" else "desc"
        else:
            new_dir = queries.DEFAULT_DIRECTION[column]
        return board_url(sort=column, dir=new_dir)

    def page_url(number: int) -> str:
        return board_url(sort=result.sort, dir=result.direction, page=number)

    hidden = {status: n for status, n in counts.items() if n and status not in statuses}
    # The column of the metric the board ranks by first, emphasised (None: that metric has
    # no column of its own and is shown after the score, emphasised there).
    ranking_column = queries.METRIC_COLUMNS.get(result.ranking[0])
    return render_template("board.html", board=result, columns=COLUMNS, sort_url=sort_url,
                           ranking_column=ranking_column, win_rates=rates,
                           page_url=page_url, splits=splits, counts=counts, hidden=hidden,
                           meanings=queries.STATUS_MEANINGS,
                           show_all_url=board_url(queries.LISTED),
                           verified_url=board_url(queries.PAGE_STATUSES),
                           split_url=lambda other: board_url(split=other))


@pages.get("/submissions/<submission_id>")
def submission_page(submission_id: str) -> Any:
    item = queries.submission(state().db, submission_id)
    if item is None:
        abort(404)
    breakdown = item["breakdown"] or {}
    scores = breakdown.get("scores") or []
    chart = histogram(scores) if scores else None
    metrics = item["metrics"] or {}
    claimed = item["claimed_metrics"] or {}
    rows = []
    for key in sorted(set(metrics) | set(claimed)):
        rows.append({"name": key, "mine": metrics.get(key), "claimed": claimed.get(key)})
    challenge = challenge_name(item["split"])
    if challenge is None:
        response = make_response(render_template(
            "submission.html", s=item, chart=chart, metric_rows=rows,
            tasks=breakdown.get("tasks") or [], counts=breakdown.get("counts"),
            rescored=breakdown.get("rescored", False)))
    else:
        # A challenge run's hidden tasks: aggregates for anyone, per-task counts (never
        # scores) for the submitter's own token only.
        owner = sent_by_owner(state().db, request.headers.get("Authorization"),
                              item["token_id"])
        response = make_response(render_template(
            "submission.html", s=item, chart=chart, metric_rows=rows, challenge=challenge,
            totals=queries.result_totals(breakdown),
            task_counts=queries.task_counts(breakdown) if owner else []))
    response.headers["Vary"] = "Authorization"
    return response


def _percent(value: Any) -> str:
    if value is None:
        return "–"
    return f"{100 * float(value):.1f}"


def _number(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{float(value):.4g}"


def register_filters(app: Flask) -> None:
    app.jinja_env.filters["pct"] = _percent
    app.jinja_env.filters["num"] = _number
    app.jinja_env.filters["iso"] = queries.iso
    app.jinja_env.filters["day"] = lambda value: value.strftime("%Y-%m-%d") if value else "–"

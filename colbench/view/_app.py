"""The viewer's web app: one page, its script and stylesheet, and a JSON API the page polls.

Flask comes from the ``view`` extra and is imported only here, so that ``import colbench``
and every other command stay free of it.

API (every answer JSON, except images and the page's own files):

* ``GET /api/runs``: every run found, its identity, counts, success and score, status
  (``running`` with n/N and an ETA, ``stopped`` with why, or ``finished``) and ``version`` (changes when its files do);
* ``GET /api/runs/ID``: one run and its episode list (outcome, score, turns, group values);
* ``GET /api/runs/ID/episode?task=T&trial=N``: one transcript, images as URLs;
* ``GET /api/runs/ID/image?task=T&trial=N&n=K``: the K-th image the episode names;
* ``GET /api/runs/ID/breakdown?key=K``: per group of task metadata ``K``, turns used, score
  histogram, with SVG plots;
* ``GET /api/compare?a=ID&b=ID``: two runs per (task, trial), flips marked, with McNemar's
  test on success and a paired bootstrap on score;
* ``GET /api/training``: loss, reward and other curves from trainers' logs under the folders.

Requests whose ``Host`` is not the address served are refused while the server listens on a
loopback address, so that a web page elsewhere cannot reach the API through a DNS name that
it points at 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from colbench.errors import MissingExtraError
from colbench.view._analysis import (
    TaskMetadataCache,
    breakdown,
    compare,
    episode_row,
    find_trainings,
    group_keys,
    run_groups,
    training_plots,
    transcript,
)
from colbench.view._runs import LoadedRun, RunIndex, folder_label

try:
    import flask
    from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
except ImportError as exc:  # pragma: no cover - exercised where flask is missing
    raise MissingExtraError("colbench view", "view", "flask") from exc

#: The page's own files, by the name in their URL; nothing else is served from disk but the
#: images that runs name.
ASSETS = {"viewer.js": "text/javascript", "viewer.css": "text/css"}
#: How often the page asks whether runs changed.
DEFAULT_POLL_SECONDS = 3.0
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def create_app(roots: Sequence[str | Path], *, poll_seconds: float = DEFAULT_POLL_SECONDS,
               allowed_hosts: Sequence[str] | None = None,
               metadata: TaskMetadataCache | None = None) -> flask.Flask:
    """The viewer over the runs at or under ``roots``. ``allowed_hosts``: host names the
    ``Host`` header may carry (None: any)."""
    index = RunIndex(roots)
    tasks = metadata or TaskMetadataCache()
    # No Flask static route: the page's files are served by name from ASSETS only.
    app = flask.Flask("colbench.view", static_folder=None)
    app.url_map.merge_slashes = False  # a URL names exactly one route, or none
    app.config["COLBENCH_RUN_INDEX"] = index
    app.json.sort_keys = False  # type: ignore[attr-defined]
    allowed = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}

    @app.before_request
    def check_host() -> Any:
        if allowed is not None and _host_name(flask.request.host) not in allowed:
            return _error(403, f"host {flask.request.host!r} is not served here")
        return None

    @app.after_request
    def protect(response: flask.Response) -> flask.Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if flask.request.path.startswith("/api/") and response.mimetype == "application/json":
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.get("/")
    def page() -> flask.Response:
        return flask.Response(_asset_text("index.html"), mimetype="text/html")

    @app.get("/assets/<name>")
    def asset(name: str) -> flask.Response:
        if name not in ASSETS:
            flask.abort(404)
        return flask.Response(_asset_text(name), mimetype=ASSETS[name])

    @app.get("/api/runs")
    def runs() -> Any:
        return {"runs": [run.listing() for run in index.refresh()],
                "roots": [str(root) for root in index.roots], "poll_seconds": poll_seconds}

    @app.get("/api/runs/<run_id>")
    def run_detail(run_id: str) -> Any:
        run = _run(index, run_id)
        groups, problem = run_groups(run, tasks)
        keys = group_keys(groups)
        return {"run": run.listing(), "group_keys": keys, "metadata_problem": problem,
                "episodes": [episode_row(record, {k: group[k] for k in keys if k in group})
                             for record, group in zip(run.records, groups, strict=True)]}

    @app.get("/api/runs/<run_id>/episode")
    def episode(run_id: str) -> Any:
        run = _run(index, run_id)
        task_id, trial = _episode_key()
        record = run.by_key.get((task_id, trial))
        if record is None:
            return _error(404, f"run {run_id} has no episode {task_id!r} trial {trial}")

        def image_url(number: int) -> str:
            query = urlencode({"task": task_id, "trial": trial, "n": number})
            return f"/api/runs/{run.id}/image?{query}"

        return transcript(record, image_url, run.path)

    @app.get("/api/runs/<run_id>/image")
    def image(run_id: str) -> Any:
        _run(index, run_id)
        task_id, trial = _episode_key()
        number = _int_arg("n")
        try:
            found = index.image_path(run_id, task_id, trial, number)
        except KeyError:
            found = None
        if found is None:
            return _error(404, "no such image")
        path, mime = found
        return flask.send_file(path, mimetype=mime, max_age=3600, conditional=True)

    @app.get("/api/runs/<run_id>/breakdown")
    def run_breakdown(run_id: str) -> Any:
        run = _run(index, run_id)
        groups, problem = run_groups(run, tasks)
        keys = group_keys(groups)
        key = flask.request.args.get("key") or (keys[0] if keys else None)
        if key is not None and key not in keys:
            return _error(400, f"no task metadata {key!r} to group by; there is: "
                               f"{', '.join(keys) or 'none'}")
        result = breakdown(run.records, groups, key)
        result["metadata_problem"] = problem
        return result

    @app.get("/api/compare")
    def compare_runs() -> Any:
        a = flask.request.args.get("a", "")
        b = flask.request.args.get("b", "")
        return compare(_run(index, a), _run(index, b))

    @app.get("/api/training")
    def training() -> Any:
        found = find_trainings(index.roots)
        return {"trainings": [{"path": str(path), "label": folder_label(path, index.roots),
                               "plots": training_plots(curves),
                               "curves": {name: [list(point) for point in points]
                                          for name, points in curves.items()}}
                              for path, curves in found.items()]}

    @app.errorhandler(404)
    def not_found(_exc: Exception) -> Any:
        return _error(404, "not found")

    return app


def _run(index: RunIndex, run_id: str) -> LoadedRun:
    try:
        return index.get(run_id)
    except KeyError:
        flask.abort(_error(404, f"no run {run_id!r} here"))
        raise  # pragma: no cover - abort raises


def _episode_key() -> tuple[str, int]:
    task_id = flask.request.args.get("task")
    if not task_id:
        flask.abort(_error(400, "give the episode's task id as ?task=..."))
    return task_id, _int_arg("trial")


def _int_arg(name: str) -> int:
    value = flask.request.args.get(name, "")
    try:
        return int(value)
    except ValueError:
        flask.abort(_error(400, f"?{name}= must be a whole number, got {value!r}"))
        raise  # pragma: no cover - abort raises


def _error(status: int, message: str) -> flask.Response:
    response = flask.jsonify({"error": message})
    response.status_code = status
    return response


def _asset_text(name: str) -> str:
    return resources.files("colbench.view").joinpath("static", name).read_text(
        encoding="utf-8")


def _host_name(host: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8000`` -> ``::1``)."""
    host = host.lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def loopback_names(host: str) -> list[str] | None:
    """The ``Host`` names a server on ``host`` answers to: the loopback names when it
    listens on a loopback address, None (any) otherwise."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        return None
    return ["localhost", "127.0.0.1", "::1", host.lower()]


class _QuietHandler(WSGIRequestHandler):
    """No line per request: the page polls every few seconds, which would bury the
    terminal's real messages."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class ViewServer:
    """The viewer served on a thread (the command serves it in the foreground)."""

    def __init__(self, roots: Sequence[str | Path], host: str = "127.0.0.1", port: int = 0,
                 *, poll_seconds: float = DEFAULT_POLL_SECONDS,
                 metadata: TaskMetadataCache | None = None) -> None:
        self.app = create_app(roots, poll_seconds=poll_seconds,
                              allowed_hosts=loopback_names(host), metadata=metadata)
        # Our own listening socket: werkzeug, binding one itself, ends the process on an
        # address in use; here the caller gets the OSError and says what to do.
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family)
        try:
            self._server: BaseWSGIServer = make_server(
                host, port, self.app, threaded=True, request_handler=_QuietHandler,
                fd=listener.fileno())
        finally:
            listener.close()  # the server holds its own duplicate of the socket
        #: The runs served (the app's own index).
        self.index: RunIndex = self.app.config["COLBENCH_RUN_INDEX"]
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def start(self) -> ViewServer:
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="colbench-view", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

"""The submitting side: ``colbench submit RUN_DIR --server URL --token T``.

Needs only colbench's own dependencies (httpx). The run directory is read through
:class:`colbench.rundir.RunDir`, which owns its format. The run's ``episodes.jsonl`` is gzipped and
sent with ``summary.json`` and the metadata as one multipart request with a known length, so
the server can refuse an oversized upload before it reads it; a progress bar shows the
upload. Every refusal becomes a :class:`SubmitError` carrying the server's reason.
"""

from __future__ import annotations

import gzip
import json
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from colbench.errors import ColbenchError, ConfigError
from colbench.rundir import EPISODES_FILE, EPISODES_GZ_FILE, SUMMARY_FILE, RunDir

CHUNK = 64 << 10


class SubmitError(ColbenchError):
    """The server refused a submission (``status`` is its HTTP status) or could not be
    reached (``status`` is None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class SubmitResult:
    id: str
    page: str
    url: str
    status: str = "pending"
    errors: list[str] = field(default_factory=list)


def load_run(run_dir: str | Path) -> tuple[bytes, bytes, dict[str, Any]]:
    """``(summary bytes, episodes bytes, summary)`` of a run directory, checked enough that
    a bad folder is named here rather than refused by the server."""
    run = RunDir(run_dir)
    if not run.path.is_dir():
        raise ConfigError(f"{run_dir} is not a directory (give the --out folder of "
                          "'colbench evaluate')")
    summary_path = run.summary_path
    if not summary_path.is_file():
        raise ConfigError(f"{run_dir} has no {SUMMARY_FILE}: is it a finished colbench run?")
    episodes = run.episodes_for_upload()
    summary_bytes = summary_path.read_bytes()
    try:
        summary = json.loads(summary_bytes)
    except ValueError as exc:
        raise ConfigError(f"{summary_path}: not valid JSON ({exc})") from exc
    if not isinstance(summary, dict) or "env" not in summary or "task_set" not in summary:
        raise ConfigError(f"{summary_path} is not a colbench summary (no env or task_set)")
    return summary_bytes, episodes, summary


def load_metadata(path: str | Path | None, summary: dict[str, Any]) -> dict[str, Any]:
    """The metadata file's object; without a file, the run's model spec as ``model_name``."""
    if path is None:
        return {"model_name": str(summary.get("model") or "unnamed model")}
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the metadata file {str(path)!r}: {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the metadata must be a JSON object")
    if not isinstance(data.get("model_name"), str) or not data["model_name"].strip():
        raise ConfigError(f"{path}: 'model_name' is required (the name shown on the board)")
    return data


def multipart(parts: list[tuple[str, str, str, bytes]]) -> tuple[bytes, str]:
    """``(body, content type)`` for ``(name, filename, content type, data)`` parts."""
    boundary = "colbench-" + secrets.token_hex(16)
    chunks = []
    for name, filename, ctype, data in parts:
        chunks.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                      f"filename=\"{filename}\"\r\nContent-Type: {ctype}\r\n\r\n".encode())
        chunks.append(data)
        chunks.append(b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


def _stream(body: bytes, progress: Callable[[int], None] | None) -> Iterator[bytes]:
    for start in range(0, len(body), CHUNK):
        chunk = body[start:start + CHUNK]
        yield chunk
        if progress is not None:
            progress(len(chunk))


def _reason(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        # Not the app's JSON: a proxy's or the WSGI server's own page (waitress answers an
        # oversized upload itself, in plain text with CRLFs), made one line.
        text = " ".join(response.text.split())
        return text[:300] or response.reason_phrase
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return data["error"]
    return str(data)[:300]


def submit_run(run_dir: str | Path, server: str, token: str, *,
               metadata: str | Path | None = None, wait: bool = False,
               wait_timeout: float = 1800.0, progress: bool = True,
               out: TextIO | None = None, timeout: float = 300.0,
               poll_seconds: float = 2.0) -> SubmitResult:
    """Send a run; with ``wait``, poll until the server's verdict. Raises SubmitError."""
    out = out or sys.stderr
    if not token:
        raise ConfigError("no token: pass --token or set COLBENCH_LEADERBOARD_TOKEN")
    if not server.startswith(("http://", "https://")):
        raise ConfigError(f"--server must be an http(s) URL, got {server!r}")
    base = server.rstrip("/")
    summary_bytes, episodes, summary = load_run(run_dir)
    meta = load_metadata(metadata, summary)
    if not episodes.startswith(b"\x1f\x8b"):
        raw_size = len(episodes)
        episodes = gzip.compress(episodes, compresslevel=6, mtime=0)
        print(f"{EPISODES_FILE}: {raw_size:,} bytes, {len(episodes):,} gzipped", file=out)
    body, content_type = multipart([
        ("summary", SUMMARY_FILE, "application/json", summary_bytes),
        ("episodes", EPISODES_GZ_FILE, "application/gzip", episodes),
        ("metadata", "metadata.json", "application/json",
         json.dumps(meta, ensure_ascii=False).encode("utf-8")),
    ])
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type,
               "Content-Length": str(len(body)), "Accept": "application/json"}
    bar = None
    update = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(body), unit="B", unit_scale=True, desc="uploading", file=out,
                   dynamic_ncols=True)
        update = bar.update
    with httpx.Client(timeout=timeout) as client:
        try:
            response = client.post(f"{base}/api/v1/submissions",
                                   content=_stream(body, update), headers=headers)
        except httpx.HTTPError as exc:
            raise SubmitError(f"could not reach {base}: {exc}") from exc
        finally:
            if bar is not None:
                bar.close()
        if response.status_code != 202:
            reason = _reason(response)
            if response.status_code == 413 and "json" not in response.headers.get(
                    "content-type", ""):  # the WSGI server's refusal, not the app's
                reason = (f"the upload ({len(body):,} bytes) is larger than the server "
                          f"accepts ({reason})")
            raise SubmitError(f"the server refused the submission (HTTP "
                              f"{response.status_code}): {reason}",
                              status=response.status_code)
        try:
            data = response.json()
            submission_id = str(data["id"])
        except (ValueError, KeyError, TypeError):
            raise SubmitError(f"{base} answered 202 without a submission id; is it a colbench "
                              "leaderboard?") from None
        result = SubmitResult(id=submission_id, page=str(data.get("page", "")),
                              url=str(data.get("url")
                                      or f"{base}/api/v1/submissions/{submission_id}"))
        if wait:
            _wait(client, result, wait_timeout, poll_seconds, out)
        return result


def _wait(client: httpx.Client, result: SubmitResult, timeout: float, poll: float,
          out: TextIO) -> None:
    """Poll the submission until it leaves ``pending`` (or raise after ``timeout``)."""
    deadline = time.monotonic() + timeout
    print(f"waiting for the verdict on {result.id}...", file=out)
    delay = min(0.5, poll)
    while True:
        try:
            response = client.get(result.url, headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise SubmitError(f"lost the server while waiting: {exc}") from exc
        if response.status_code != 200:
            raise SubmitError(f"could not read submission {result.id} (HTTP "
                              f"{response.status_code}): {_reason(response)}",
                              status=response.status_code)
        data = response.json()
        result.status = data.get("status", "pending")
        result.errors = list(data.get("errors") or [])
        if result.status != "pending":
            return
        if time.monotonic() + delay > deadline:
            raise SubmitError(f"submission {result.id} is still pending after {timeout:g} s; "
                              f"see {result.page}")
        time.sleep(delay)
        delay = min(poll, delay * 1.5)

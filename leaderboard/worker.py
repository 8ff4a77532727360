"""The verification worker: claims pending submissions from the database and verifies them.

The queue is the ``submissions`` table itself, so nothing acknowledged is ever only in
memory: a worker killed mid-verification leaves its claim behind, and once the claim's lease
runs out (no heartbeat for ``lease_seconds``) another worker, or the same server restarted,
takes the submission over. Several workers (threads, processes, machines) can share one
database: a claim is an atomic conditional ``UPDATE``.

Each verification runs in a child process of its own (:func:`verify_isolated`), never in the
process that claimed it, which may be the web server's: the values hostile answers return
can cost minutes of CPU to decode, and the board must keep answering meanwhile. The child
comes from multiprocessing's fork server, not from a fork of the (threaded) server: a fork
copies whatever lock another thread held at that moment (the catalog's, a registry's, an
import's) and the child waits on it forever. It gets the stored upload as the web process
stored it (the parts as sent: the web process parses none of it) and the catalog (its given
suites; registered ones are found again and their task sets read from the disk cache). It
reads the upload under the settings' upload limits (``upload.UploadLimits``: streamed, each
limit stops the reading where it is passed), sends what it read (:class:`UploadFacts`: the
summary, the metadata, the scored content's fingerprint) to the worker, which fills in the
submission's columns, refuses a token's second copy of its own results as a duplicate, and
answers with the hidden tasks when the run was made on a challenge (:class:`Admission`);
then it verifies and sends back its :class:`~colbench.leaderboard.verify.Verification`. It
touches no database and starts its own sandbox pool. An upload it cannot read ends
``rejected`` with the reason.
It runs under ``verify_cpu_seconds`` of CPU (``RLIMIT_CPU``) and ``verify_memory_bytes`` of
address space (``RLIMIT_AS``), both soft limits so that the sandbox's own workers may still
set theirs, and is killed after ``verify_wall_seconds``. A verification stopped by a limit
ends ``unverified`` with the reason; a child that died for another reason is the server's
failure, retried up to ``max_verify_attempts`` times like any other; no outcome leaves the
claim behind.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import multiprocessing
import os
import resource
import signal
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError

from colbench.errors import EnvironmentFailure
from colbench.leaderboard._db import (
    PENDING,
    REJECTED,
    UNVERIFIED,
    Database,
    Submission,
    utcnow,
)
from colbench.leaderboard._settings import LeaderboardSettings
from colbench.leaderboard.challenge import (
    ChallengeError,
    ChallengeSplit,
    challenge_for_run,
    challenge_split,
)
from colbench.leaderboard.suites import SuiteCatalog
from colbench.leaderboard.upload import (
    Metadata,
    ParsedRun,
    UploadError,
    UploadLimits,
    parse_metadata,
    parse_run,
)
from colbench.leaderboard.verify import Verification, verify_run
from colbench.records import Summary

log = logging.getLogger(__name__)


def _metric_json(verification: Verification) -> str:
    return json.dumps({k: v.model_dump(mode="json") for k, v in verification.metrics.items()},
                      sort_keys=True)


class VerificationWorker:
    """Verifies pending submissions. :meth:`run_once` does one (tests and ``--once`` use it);
    :meth:`start` runs ``threads`` loops in the background until :meth:`stop`."""

    def __init__(self, db: Database, settings: LeaderboardSettings, catalog: SuiteCatalog,
                 *, owner: str | None = None) -> None:
        self.db = db
        self.settings = settings
        self.catalog = catalog
        self.owner = owner or f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._held: set[str] = set()
        self._held_lock = threading.Lock()

    # -- claims -----------------------------------------------------------------------------
    def _cutoff(self) -> dt.datetime:
        return utcnow() - dt.timedelta(seconds=self.settings.lease_seconds)

    def claim(self) -> str | None:
        """Claim the oldest pending submission nobody holds (or whose holder went silent)."""
        with self.db.read() as session:
            candidates = list(session.scalars(
                select(Submission.id)
                .where(Submission.status == PENDING,
                       or_(Submission.claim_owner.is_(None),
                           Submission.claimed_at < self._cutoff()))
                .order_by(Submission.created_at, Submission.id).limit(8)))
        for submission_id in candidates:
            with self.db.write() as session:
                result = session.execute(
                    update(Submission)
                    .where(Submission.id == submission_id, Submission.status == PENDING,
                           or_(Submission.claim_owner.is_(None),
                               Submission.claimed_at < self._cutoff()))
                    .values(claim_owner=self.owner, claimed_at=utcnow(),
                            attempts=Submission.attempts + 1))
            if result.rowcount == 1:
                with self._held_lock:
                    self._held.add(submission_id)
                return submission_id
        return None

    def heartbeat(self) -> None:
        """Refresh the lease of every submission this worker is verifying."""
        with self._held_lock:
            held = list(self._held)
        if not held:
            return
        with self.db.write() as session:
            session.execute(update(Submission)
                            .where(Submission.id.in_(held), Submission.claim_owner == self.owner)
                            .values(claimed_at=utcnow()))

    def _release(self, submission_id: str, values: dict[str, Any]) -> bool:
        with self._held_lock:
            self._held.discard(submission_id)
        with self.db.write() as session:
            result = session.execute(
                update(Submission)
                .where(Submission.id == submission_id, Submission.claim_owner == self.owner,
                       Submission.status == PENDING)
                .values(claim_owner=None, claimed_at=None, **values))
        return result.rowcount == 1

    # -- verification -----------------------------------------------------------------------
    def verify(self, submission_id: str) -> Verification | None:
        """Verify a submission this worker has claimed, in a limited child process (see the
        module docstring), and store the outcome. Returns None when the server could not do
        it this time (it stays pending, to be retried)."""
        with self.db.read() as session:
            row = session.get(Submission, submission_id)
            if row is None:
                return None
            upload = StoredUpload.of(row, self.settings)
            token_id, attempts = row.token_id, row.attempts

        def admit(facts: UploadFacts) -> Admission:
            return self._admit(submission_id, token_id, facts)

        outcome = verify_isolated(upload, self.catalog, self.settings, admit=admit,
                                  stop=self._stop)
        if outcome.stopped:  # the worker is shutting down: leave it for the next one
            self._release(submission_id, {})
            return None
        if outcome.server_failure is not None:
            return self._server_failure(submission_id, attempts, outcome.server_failure)
        verification = outcome.verification
        assert verification is not None
        values: dict[str, Any] = {
            "status": verification.status, "errors": json.dumps(verification.errors),
            "verified_at": utcnow(), "metrics_json": _metric_json(verification),
            "claimed_metrics_json": json.dumps(verification.claimed, sort_keys=True),
            "breakdown_json": json.dumps(verification.breakdown),
            "checks_json": json.dumps(verification.checks)}
        for column, key in (("success", "success_rate"), ("score", "score")):
            summary = verification.metrics.get(key)
            values[f"{column}_mean"] = summary.mean if summary else None
            values[f"{column}_lo"] = summary.ci95[0] if summary else None
            values[f"{column}_hi"] = summary.ci95[1] if summary else None
        self._release(submission_id, values)
        return verification

    def _admit(self, submission_id: str, token_id: int, facts: UploadFacts) -> Admission:
        """What the worker decides once the child has read the upload, before anything is
        replayed: the submission's columns are filled in from it; a run on a challenge's
        tasks gets the challenge's hidden tasks; a copy of results this token submitted
        before ends here, ``rejected`` as a duplicate of that one (its id in the reason and
        in ``duplicate_of``), unless that one ended unverified or rejected: the copy is then
        verified afresh (its summary may have been mended, the server's sandbox fixed) and
        takes the fingerprint over, the old entry naming it in ``duplicate_of``; a copy of
        another token's results goes on, and ``duplicate_of`` names the earliest entry with
        that content."""
        try:
            info = challenge_for_run(self.db, facts.summary)
        except ChallengeError as exc:
            self._record(submission_id, facts, None, None)
            return Admission(Verification(REJECTED, [exc.message]))
        challenge = challenge_split(self.db, info.name) if info is not None else None
        split = info.split if info is not None else None
        for _ in range(2):  # a concurrent copy under the same token may win the race
            with self.db.read() as session:
                own = session.execute(
                    select(Submission.id, Submission.status)
                    .where(Submission.token_id == token_id,
                           Submission.content_digest == facts.digest,
                           Submission.id != submission_id)).first()
                earliest = session.scalar(
                    select(Submission.id)
                    .where(Submission.content_digest == facts.digest,
                           Submission.token_id != token_id)
                    .order_by(Submission.created_at, Submission.id).limit(1))
            superseded = None
            if own is not None and own[1] in (UNVERIFIED, REJECTED):
                superseded = own[0]
            elif own is not None:
                self._record(submission_id, facts, None, own[0], split=split)
                return Admission(Verification(REJECTED, [duplicate_reason(own[0], own[1])]))
            try:
                self._record(submission_id, facts, facts.digest, earliest, split=split,
                             superseded=superseded)
            except IntegrityError:
                continue
            return Admission(challenge=challenge)
        raise RuntimeError("the duplicate check kept meeting a concurrent copy")

    def _record(self, submission_id: str, facts: UploadFacts, digest: str | None,
                duplicate_of: str | None, *, split: str | None = None,
                superseded: str | None = None) -> None:
        """Fill in what the upload says about itself (while this worker holds the claim);
        ``superseded``: the token's earlier entry whose fingerprint this one takes over."""
        values = facts.columns(split)
        values.update(content_digest=digest, duplicate_of=duplicate_of)
        with self.db.write() as session:
            if superseded is not None:
                session.execute(update(Submission).where(Submission.id == superseded)
                                .values(content_digest=None, duplicate_of=submission_id))
            session.execute(update(Submission)
                            .where(Submission.id == submission_id,
                                   Submission.claim_owner == self.owner,
                                   Submission.status == PENDING)
                            .values(**values))

    def _server_failure(self, submission_id: str, attempts: int, reason: str) -> None:
        if attempts >= self.settings.max_verify_attempts:
            self._release(submission_id, {
                "status": UNVERIFIED, "verified_at": utcnow(),
                "errors": json.dumps([f"the server could not verify this submission after "
                                      f"{attempts} attempts ({reason[:500]})"])})
        else:
            log.warning("verifying %s failed on the server's side (attempt %d): %s; it stays "
                        "pending", submission_id, attempts, reason)
            self._release(submission_id, {})
        return None

    def run_once(self) -> str | None:
        """Claim and verify one submission; its id, or None when nothing was pending."""
        submission_id = self.claim()
        if submission_id is None:
            return None
        self.verify(submission_id)
        return submission_id

    def drain(self, timeout: float = 600.0) -> int:
        """Verify until nothing is pending (that this worker may take); how many it did."""
        deadline = time.monotonic() + timeout
        done = 0
        while time.monotonic() < deadline and self.run_once() is not None:
            done += 1
        return done

    # -- background -------------------------------------------------------------------------
    def wake(self) -> None:
        """Look for work now (the API calls it after storing a submission)."""
        self._wake.set()

    def start(self, threads: int = 1) -> None:
        if self._threads:
            return
        self._stop.clear()
        for index in range(max(1, threads)):
            thread = threading.Thread(target=self._loop, name=f"colbench-verifier-{index}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        beat = threading.Thread(target=self._beat, name="colbench-verifier-heartbeat",
                                daemon=True)
        beat.start()
        self._threads.append(beat)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                did = self.run_once()
            except Exception:  # the database went away for a moment: try again later
                log.warning("the verification worker hit an error:\n%s", traceback.format_exc())
                did = None
            if did is None:
                self._wake.wait(self.settings.poll_seconds)
                self._wake.clear()

    def _beat(self) -> None:
        interval = max(0.05, self.settings.lease_seconds / 3)
        while not self._stop.wait(interval):
            try:
                self.heartbeat()
            except Exception:
                log.warning("the verification heartbeat failed:\n%s", traceback.format_exc())



# -- one verification in a limited child process ---------------------------------------------

@dataclass
class IsolatedOutcome:
    """How a verification in a child process ended: a ``verification`` (a limit that
    stopped it is an ``unverified`` one that says so), or a ``server_failure`` reason (to be
    retried), or ``stopped`` (the worker shut down and killed it)."""

    verification: Verification | None = None
    server_failure: str | None = None
    stopped: bool = False


def _limited(reason: str) -> Verification:
    return Verification(UNVERIFIED, [f"verification stopped: {reason}; the server did not "
                                     "finish checking this run"])


def _mapped_bytes() -> int:
    """This process's address space now (a forked child starts with its parent's)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _apply_limits(settings: LeaderboardSettings) -> None:
    """The child's own limits: soft, so that the sandbox's workers (its children, trusted
    code) may still set theirs; this process never raises them. The memory limit is what
    the verification may add to the address space it was forked with (the server's own
    size is none of the submission's doing)."""
    memory = _mapped_bytes() + int(settings.verify_memory_bytes)
    for limit, value in ((resource.RLIMIT_CPU, max(1, int(settings.verify_cpu_seconds))),
                         (resource.RLIMIT_AS, memory)):
        _, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(limit, (value, hard))


@dataclass
class StoredUpload:
    """A stored upload's parts as the web process stored them, and the limits they are
    read under. ``metadata`` is None for rows stored before the web process stopped
    reading uploads (their columns are already filled in, and their limits were applied
    when they were accepted)."""

    summary: bytes
    episodes: bytes
    metadata: bytes | None
    limits: UploadLimits

    @classmethod
    def of(cls, row: Submission, settings: LeaderboardSettings) -> StoredUpload:
        if row.raw_summary is None:
            return cls(row.summary_json.encode("utf-8"), bytes(row.episodes_gz), None,
                       UploadLimits.unlimited())
        limits = settings.upload_limits()
        return cls(bytes(row.raw_summary), bytes(row.episodes_gz),
                   bytes(row.raw_metadata) if row.raw_metadata is not None else b"", limits)


@dataclass
class UploadFacts:
    """What the child read from an upload, sent to the worker before anything is
    replayed (see :meth:`VerificationWorker._admit`)."""

    summary: Summary
    summary_text: str
    metadata: Metadata | None
    digest: str
    episodes: int
    task_count: int

    @classmethod
    def of(cls, run: ParsedRun, metadata: Metadata | None) -> UploadFacts:
        summary = run.summary
        return cls(summary=summary, summary_text=run.summary_text, metadata=metadata,
                   digest=run.digest(), episodes=len(run.records),
                   task_count=summary.task_set.count or len({r.task_id for r in run.records}))

    def columns(self, split: str | None = None) -> dict[str, Any]:
        """The submission's columns these facts fill in (``split``: the board it is
        listed on, when not the run's own: a challenge's)."""
        summary = self.summary
        values: dict[str, Any] = dict(
            env=summary.env, split=split or summary.split or "", run_model=summary.model,
            simulator=summary.simulator, scorer=summary.scorer, protocol=summary.protocol,
            colbench_version=summary.colbench_version, task_set_name=summary.task_set.name,
            task_set_hash=summary.task_set.hash, task_count=self.task_count,
            trials=summary.trials, episodes=self.episodes, summary_json=self.summary_text)
        if self.metadata is not None:
            values.update(dataclasses.asdict(self.metadata))
        return values


@dataclass
class Admission:
    """The worker's answer to :class:`UploadFacts`: a ``verdict`` that ends the
    verification there (a duplicate), or go on, against ``challenge``'s hidden tasks when
    the run was made on a challenge."""

    verdict: Verification | None = None
    challenge: ChallengeSplit | None = None


def duplicate_reason(original: str, status: str) -> str:
    """Why a token's second copy of its own results is refused."""
    return (f"duplicate: this token already submitted these results as {original} (status "
            f"{status}): the same actions, answers, seeds and tasks; timings and labels do not "
            "make a different run")


def _child(conn: Connection, upload: StoredUpload, catalog: SuiteCatalog,
           settings: LeaderboardSettings) -> None:
    """The child process: read the upload, tell the worker what it is and wait for its
    :class:`Admission`, verify, send ``(kind, payload)`` back, exit."""
    message: tuple[str, Any]
    try:
        _apply_limits(settings)
        try:
            metadata = parse_metadata(upload.metadata) if upload.metadata is not None else None
            run = parse_run(upload.summary, upload.episodes, upload.limits)
        except UploadError as exc:
            message = ("done", Verification(REJECTED, [exc.message]))
        else:
            conn.send(("parsed", UploadFacts.of(run, metadata)))
            challenge = conn.recv()
            if challenge is not None:
                catalog = challenge.catalog(catalog)
            message = ("done", verify_run(run, catalog, settings,
                                          threads=settings.rescore_threads))
    except MemoryError:
        message = ("done", _limited(f"it needed more than the server's memory limit of "
                                    f"{settings.verify_memory_bytes / (1 << 20):.0f} MiB"))
    except (EnvironmentFailure, OSError, RuntimeError) as exc:
        message = ("failure", f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a bug: keep the submission, say why, never lose it
        log.error("verification failed:\n%s", traceback.format_exc())
        message = ("failure", f"{type(exc).__name__}: {exc}")
    try:
        conn.send(message)
    except Exception as exc:  # e.g. an unpicklable value in a verdict: the server's bug
        conn.send(("failure", f"the verdict could not be sent back ({type(exc).__name__}: "
                              f"{exc})"))
    finally:
        conn.close()


#: Imported once by the fork server, so that each child starts with them.
_PRELOAD = ["colbench.leaderboard.worker", "colbench.leaderboard.challenge"]


def _go_on(facts: UploadFacts) -> Admission:
    return Admission()


def verify_isolated(upload: StoredUpload, catalog: SuiteCatalog,
                    settings: LeaderboardSettings, *,
                    admit: Callable[[UploadFacts], Admission] = _go_on,
                    stop: threading.Event | None = None) -> IsolatedOutcome:
    """Read and verify a stored upload in a child process under the settings' CPU, memory
    and wall limits (see the module docstring). Once the child has read the upload,
    ``admit`` (run here, in the worker) decides whether it goes on, and against which
    challenge's hidden tasks. ``stop``: when set, the child is killed and the outcome is
    ``stopped``."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    here, there = context.Pipe()
    child = context.Process(target=_child, name="colbench-verify",
                            args=(there, upload, catalog, settings))
    child.start()
    there.close()
    deadline = time.monotonic() + settings.verify_wall_seconds
    message: tuple[str, Any] | None = None
    killed_for: str | None = None
    child_done = False  # the child sent its last word and exits by itself
    try:
        while True:
            remaining = deadline - time.monotonic()
            try:
                if here.poll(max(0.0, min(0.25, remaining))):
                    kind, payload = here.recv()
                    if kind != "parsed":
                        message, child_done = (kind, payload), True
                        break
                    try:
                        admission = admit(payload)
                    except Exception as exc:  # the database went away: retried later
                        message = ("failure", f"{type(exc).__name__}: {exc}")
                        break
                    if admission.verdict is not None:
                        message = ("done", admission.verdict)
                        break
                    here.send(admission.challenge)
                    continue
            except (EOFError, OSError):  # it exited without a word: see its exit code
                break
            if stop is not None and stop.is_set():
                killed_for = "stop"
                break
            if remaining <= 0:
                killed_for = "wall"
                break
    finally:
        if not child_done and child.is_alive():
            child.kill()
        child.join()
        here.close()
    if killed_for == "stop":
        return IsolatedOutcome(stopped=True)
    if killed_for == "wall":
        return IsolatedOutcome(_limited(f"it ran past the server's wall-time limit of "
                                        f"{settings.verify_wall_seconds:g} s"))
    if message is not None:
        kind, payload = message
        if kind == "done":
            return IsolatedOutcome(verification=payload)
        return IsolatedOutcome(server_failure=str(payload))
    code = child.exitcode
    if code == -signal.SIGXCPU:
        return IsolatedOutcome(_limited(f"it used more than the server's CPU-time limit of "
                                        f"{settings.verify_cpu_seconds:g} s"))
    return IsolatedOutcome(server_failure=f"the verification process died (exit code {code})")

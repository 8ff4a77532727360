"""The leaderboard's settings: limits, rate limits and verification policy.

Every field can be set from a JSON file (``colbench leaderboard serve --config FILE``); the
defaults suit a public server. Sizes are bytes, times are seconds.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from colbench.errors import ConfigError
from colbench.protocols import DEFAULT_PROTOCOL

if TYPE_CHECKING:
    from colbench.leaderboard.upload import UploadLimits

#: The database used when no ``--db`` is given and ``COLBENCH_LEADERBOARD_DB`` is unset.
DEFAULT_DB_FILE = "colbench-leaderboard.db"


def default_db_url() -> str:
    """``$COLBENCH_LEADERBOARD_DB``, else an SQLite file in the current directory."""
    url = os.environ.get("COLBENCH_LEADERBOARD_DB", "").strip()
    if url:
        return url
    return f"sqlite:///{Path.cwd() / DEFAULT_DB_FILE}"


@dataclass(frozen=True)
class BoardReference:
    """The entry a board's win rates are measured against (setting ``win_rate_references``).

    Parameters
    ----------
    env:
        The board's env id (``colbench/Frontend-v0``).
    submission:
        The id of the reference entry (a submission on that board).
    split:
        The board's split.
    protocol:
        The board's protocol.
    """

    env: str
    submission: str
    split: str = "test"
    protocol: str = DEFAULT_PROTOCOL

    @classmethod
    def from_setting(cls, item: Any) -> BoardReference:
        """One item of ``win_rate_references``: a JSON object with ``env`` and
        ``submission`` and, optionally, ``split`` (default ``test``) and ``protocol``
        (default colbench's own). Anything else is a ConfigError naming what is wrong.

        Parameters
        ----------
        item:
            The item as read from the settings file (or a BoardReference).
        """
        if isinstance(item, BoardReference):
            return item
        keys = ("env", "submission", "split", "protocol")
        if not isinstance(item, dict) or not {"env", "submission"} <= set(item) \
                or set(item) - set(keys):
            raise ConfigError("each item of leaderboard setting win_rate_references is an "
                              'object {"env": ENV, "split": SPLIT, "protocol": PROTOCOL, '
                              '"submission": ID} (split and protocol optional), got '
                              f"{item!r}")
        for key, value in item.items():
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"win_rate_references: {key} must be a non-empty string, "
                                  f"got {value!r}")
        reference = cls(**{key: value.strip() for key, value in item.items()})
        if reference.split.startswith("challenge:"):
            raise ConfigError(f"win_rate_references: {reference.split!r} is a challenge "
                              "split, whose per-task results are sealed; a win rate compares "
                              "them task by task")
        return reference

    @property
    def board(self) -> tuple[str, str, str]:
        """The board it belongs to: (env, split, protocol)."""
        return (self.env, self.split, self.protocol)


@dataclass
class LeaderboardSettings:
    """What the server accepts and how it verifies. See the module docstring."""

    #: The whole request body (multipart) as sent; larger uploads are refused before reading.
    max_upload_bytes: int = 64 << 20
    #: ``episodes.jsonl`` after decompression (a gzip bomb stops here).
    max_episodes_bytes: int = 512 << 20
    max_summary_bytes: int = 1 << 20
    max_metadata_bytes: int = 64 << 10
    #: Episode records (lines of ``episodes.jsonl``) in one submission.
    max_records: int = 200_000
    #: One line of ``episodes.jsonl`` (one record).
    max_line_bytes: int = 16 << 20
    #: Turns over all the records of a submission, and in one record.
    max_turns: int = 500_000
    max_episode_turns: int = 1_000
    #: JSON objects and keys in one record, counted while it is decoded.
    max_record_fields: int = 250_000
    #: Submissions one token may make per ``rate_window_seconds``.
    rate_limit: int = 30
    rate_window_seconds: float = 3600.0
    #: Only runs over a whole split can be verified; a run over the first N tasks of a split
    #: is accepted and listed as unverified. Test servers turn this off.
    full_split_only: bool = True
    #: Episodes that ended in an environment error are not scored; a verified run may have
    #: at most this fraction of them (0: none).
    max_error_fraction: float = 0.0
    #: The oldest colbench whose runs this server verifies (runs newer than the server's own
    #: colbench cannot be checked by it and are never verified).
    min_colbench_version: str = "0.1.0"
    #: A verification claimed by a worker that stopped heartbeating is taken over after this.
    lease_seconds: float = 120.0
    #: How often an idle worker looks for pending submissions.
    poll_seconds: float = 1.0
    #: A submission whose verification failed on the server's side (sandbox down) this many
    #: times is listed as unverified with the reason.
    max_verify_attempts: int = 5
    #: Threads that re-run answers in the sandbox (default: the sandbox's workers).
    rescore_threads: int = 0
    #: Each submission is verified in a process of its own, never in the web server's, with
    #: these limits: CPU seconds of the verifying process (decoding the values answers
    #: return happens there; the answers themselves run in the sandbox under its limits), the
    #: address space it may add to the server's, and the wall time until it is killed. A verification stopped by a
    #: limit ends ``unverified`` with the reason.
    verify_cpu_seconds: float = 900.0
    verify_memory_bytes: int = 8 << 30
    verify_wall_seconds: float = 3600.0
    #: Verify runs whose replay executes the submitted code in a sandbox that has no per-job
    #: limits (no cgroup: memory and processes limited per process only, so one job can
    #: hold many times its memory limit). Off by default: such runs are listed unverified,
    #: saying why. Setting it accepts that risk for the machine that verifies.
    allow_weak_isolation: bool = False
    #: Rows per board page.
    page_size: int = 100
    #: The secret challenge splits are minted from (``colbench leaderboard challenge mint``;
    #: default: ``$COLBENCH_CHALLENGE_SECRET``). Never published: whoever knows it can
    #: regenerate every hidden reference. At least 16 characters.
    challenge_secret: str | None = None
    #: Distinct questions one token may ask the server's simulated human about one challenge
    #: task: this many episodes' worth of the env's turn budget (retries and resumed runs
    #: asking the same again cost nothing).
    challenge_episodes_per_task: int = 3
    #: The name of a private vocabulary registered in ``colbench.backend_vocabularies`` (an
    #: installed package, never a path) whose words Backend-v1 challenges draw along with the
    #: package's; ``challenge mint --vocabulary`` overrides it. None: the package's alone.
    challenge_vocabulary: str | None = None
    #: Per board, the entry every other entry's win rate is measured against: a list of
    #: ``{"env", "split", "protocol", "submission"}`` objects (split ``test`` and protocol
    #: ``colbench`` by default), at most one per board. Such a board shows each entry's
    #: per-task win rate against it, with its 95% interval, beside the mean score (the
    #: frontend's CLIP similarity: the paper's first figure under ``sweet-rl``).
    win_rate_references: tuple[BoardReference, ...] = ()

    def __post_init__(self) -> None:
        for name in ("max_upload_bytes", "max_episodes_bytes", "max_summary_bytes",
                     "max_metadata_bytes", "max_records", "max_line_bytes", "max_turns",
                     "max_episode_turns", "max_record_fields", "rate_limit", "max_verify_attempts",
                     "page_size", "verify_memory_bytes", "challenge_episodes_per_task"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"leaderboard setting {name} must be a positive integer, "
                                  f"got {value!r}")
        for name in ("rate_window_seconds", "lease_seconds", "poll_seconds",
                     "verify_cpu_seconds", "verify_wall_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"leaderboard setting {name} must be a positive number, "
                                  f"got {value!r}")
        if not isinstance(self.allow_weak_isolation, bool):
            raise ConfigError("leaderboard setting allow_weak_isolation must be true or false, "
                              f"got {self.allow_weak_isolation!r}")
        if not 0.0 <= float(self.max_error_fraction) <= 1.0:
            raise ConfigError("leaderboard setting max_error_fraction must lie in [0, 1], "
                              f"got {self.max_error_fraction!r}")
        if not isinstance(self.rescore_threads, int) or self.rescore_threads < 0:
            raise ConfigError("leaderboard setting rescore_threads must be an integer >= 0, "
                              f"got {self.rescore_threads!r}")
        secret = self.challenge_secret
        if secret is not None and (not isinstance(secret, str) or len(secret) < 16):
            raise ConfigError("leaderboard setting challenge_secret must be a string of at "
                              "least 16 characters (or null)")
        vocabulary = self.challenge_vocabulary
        if vocabulary is not None and (not isinstance(vocabulary, str) or not vocabulary):
            raise ConfigError("leaderboard setting challenge_vocabulary must name a registered "
                              f"vocabulary (or be null), got {vocabulary!r}")
        if not isinstance(self.win_rate_references, (list, tuple)):
            raise ConfigError("leaderboard setting win_rate_references must be a list of "
                              f"objects, got {self.win_rate_references!r}")
        references = tuple(BoardReference.from_setting(item)
                           for item in self.win_rate_references)
        boards = [reference.board for reference in references]
        twice = sorted({board for board in boards if boards.count(board) > 1})
        if twice:
            raise ConfigError("win_rate_references names more than one reference for the "
                              f"board(s) {', '.join(' '.join(board) for board in twice)}")
        self.win_rate_references = references
        from colbench.leaderboard._versions import parse_version

        if parse_version(self.min_colbench_version) is None:
            raise ConfigError("leaderboard setting min_colbench_version is not a version: "
                              f"{self.min_colbench_version!r}")

    def win_rate_reference(self, env: str, split: str, protocol: str) -> str | None:
        """The id of the reference entry of a board, or None when it has none.

        Parameters
        ----------
        env, split, protocol:
            The board.
        """
        for reference in self.win_rate_references:
            if reference.board == (env, split, protocol):
                return reference.submission
        return None

    def upload_limits(self) -> UploadLimits:
        """The limits an upload's episodes are read under (see :class:`UploadLimits`)."""
        from colbench.leaderboard.upload import UploadLimits

        return UploadLimits(episodes_bytes=self.max_episodes_bytes, lines=self.max_records,
                            line_bytes=self.max_line_bytes, turns=self.max_turns,
                            record_turns=self.max_episode_turns,
                            record_fields=self.max_record_fields)

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> LeaderboardSettings:
        """Settings from a dict; an unknown key is an error that lists the known ones."""
        if not isinstance(data, dict):
            raise ConfigError(f"leaderboard settings must be a JSON object, got "
                              f"{type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown leaderboard setting(s) {', '.join(unknown)}; known: "
                              f"{', '.join(sorted(known))}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> LeaderboardSettings:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read leaderboard settings {str(path)!r}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from exc
        return cls.from_mapping(data)

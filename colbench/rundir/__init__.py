"""The run directory: the one owner of its file names, reading, writing, summary, identity
and resume rules. The runner, ``colbench show``/``report``, the leaderboard client,
collection and the trainers' data loading all go through it.

>>> run = RunDir("runs/backend/oracle")   # doctest: +SKIP
>>> summary, partial = run.summary()       # doctest: +SKIP
"""

from colbench.rundir._differences import identity_changes, settings_label
from colbench.rundir._episodes import (
    DEFAULT_MAX_FIELD_CHARS,
    EPISODES_FILE,
    EpisodeWriter,
    cap_record_text,
    check_char_cap,
    cut_text,
    latest_per_key,
    read_episodes,
    read_latest_episodes,
    write_json_atomic,
)
from colbench.rundir._lock import LOCK_FILE, RunDirBusy
from colbench.rundir._rundir import (
    COLLECT_FILE,
    EPISODES_GZ_FILE,
    RUN_FILE,
    TASKS_FILE,
    GrowthRule,
    RunDir,
    more_trials,
    task_set_prefix_rule,
)
from colbench.rundir._summary import (
    SUMMARY_FILE,
    aggregate_episodes,
    count_episodes,
    summarise_from_identity,
    summarise_records,
)

__all__ = ["COLLECT_FILE", "DEFAULT_MAX_FIELD_CHARS", "EPISODES_FILE", "EPISODES_GZ_FILE",
           "LOCK_FILE", "RUN_FILE", "SUMMARY_FILE", "TASKS_FILE", "EpisodeWriter", "GrowthRule",
           "RunDir", "RunDirBusy", "aggregate_episodes", "cap_record_text", "check_char_cap",
           "count_episodes", "cut_text", "identity_changes", "latest_per_key", "more_trials",
           "read_episodes", "read_latest_episodes", "settings_label",
           "summarise_from_identity", "summarise_records", "task_set_prefix_rule",
           "write_json_atomic"]

"""``colbench view``: a local web viewer over run directories that refreshes while they run.

    from colbench.view import ViewServer
    server = ViewServer(["runs/"]).start()   # doctest: +SKIP
    print(server.url)                        # doctest: +SKIP

The run list (filters by env, model, protocol, state and text; sortable columns; each run
running with n/N and an ETA, stopped with why, or finished), each run's episodes and
transcripts (renders loaded on demand from their own URLs), two runs compared task by task
(flips, McNemar's test on success and a paired bootstrap on score),
breakdowns by the tasks' metadata with plots, and training curves from trainers' logs. Runs are
read through :mod:`colbench.rundir`, again whenever their files change. Needs the ``view``
extra (Flask).
"""

from colbench.view._analysis import TaskMetadataCache
from colbench.view._app import DEFAULT_POLL_SECONDS, ViewServer, create_app, loopback_names
from colbench.view._runs import RunIndex, find_run_folders

__all__ = ["DEFAULT_POLL_SECONDS", "RunIndex", "TaskMetadataCache", "ViewServer",
           "create_app", "find_run_folders", "loopback_names"]

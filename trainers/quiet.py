"""Quiet training: what ``colbench train`` prints without ``-v``.

The libraries under a trainer (transformers, TRL, datasets, torch, PEFT, accelerate) print
deprecation warnings, log lines and a progress bar per dataset pass, weight load and shard
write, even when the output goes to a file. Without ``-v`` the command instead shows one
colbench progress bar for the training phase (on a terminal only, as the runner's bar) and
sends the libraries' warnings and log records to ``train.log`` in the output folder, where
they stay for whoever needs them.

Call :func:`silence_library_bars` before the libraries are imported (tqdm reads its
``TQDM_DISABLE`` default once, at import), then run the training inside
:func:`library_output_to_log`.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The file, in the training's output folder, that receives the libraries' output.
LOG_FILE = "train.log"
#: The loggers whose records go to the log file instead of the terminal.
LIBRARY_LOGGERS = ("transformers", "trl", "datasets", "torch", "peft", "accelerate",
                   "huggingface_hub", "py.warnings")


def silence_library_bars() -> None:
    """Turn off the libraries' own progress bars, in this process and the ones it starts
    (environment variables the libraries read: tqdm's default, datasets', the hub's)."""
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    # Not TRANSFORMERS_VERBOSITY: above WARNING it makes a trainer print its logs instead
    # of showing a bar (TrainingArguments.disable_tqdm); the loggers go to the log instead.


class _FolderLogHandler(logging.Handler):
    """Appends records to ``LOG_FILE`` in ``folder`` once the folder exists (the trainer
    refuses a non-empty output folder, so nothing may be written there before it starts);
    records from before are kept in memory and written first."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.pending: list[str] = []
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.pending.append(self.format(record))
            self.flush()
        except Exception:  # logging must never break training
            self.handleError(record)

    def flush(self) -> None:
        if self.pending and self.folder.is_dir():
            with (self.folder / LOG_FILE).open("a", encoding="utf-8") as log:
                log.write("\n".join(self.pending) + "\n")
            self.pending.clear()


def _phase_bar_callback() -> Any:
    """A transformers ``TrainerCallback`` that shows one colbench bar over the training
    steps and writes the trainer's log dictionaries to the log, not to stdout."""
    from tqdm import tqdm
    from transformers import TrainerCallback

    class TrainingPhaseBar(TrainerCallback):
        def __init__(self) -> None:
            self.bar: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            # disable=None: a bar on a terminal only; given explicitly, it overrides the
            # TQDM_DISABLE default that silences the libraries' bars.
            self.bar = tqdm(total=state.max_steps, desc="colbench train: training",
                            unit="step", dynamic_ncols=True, disable=None)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.bar is not None:
                self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                   **kwargs: Any) -> None:
            logging.getLogger("transformers").info("step %s: %s", state.global_step, logs)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return TrainingPhaseBar


@contextmanager
def library_output_to_log(out: Path) -> Iterator[Path]:
    """Inside, the libraries' warnings and log records go to ``out/train.log`` (nothing to
    the terminal), and a transformers trainer shows one colbench bar for its steps in place
    of its own bar and log printing. Everything is restored on exit.

    Parameters
    ----------
    out:
        The training's output folder (it may not exist yet).
    """
    handler = _FolderLogHandler(Path(out))
    saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]] = []
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, list(logger.handlers), logger.propagate, logger.level))
        logger.handlers = [handler]
        logger.propagate = False
        logger.setLevel(logging.INFO)
    logging.captureWarnings(True)
    trainer_module = sys.modules.get("transformers.trainer")
    patched = None
    try:
        import transformers.trainer as trainer_module  # noqa: F811

        patched = trainer_module.DEFAULT_PROGRESS_CALLBACK
        trainer_module.DEFAULT_PROGRESS_CALLBACK = _phase_bar_callback()
        # Its own handler would print to stderr beside ours.
        import transformers.utils.logging as transformers_logging

        transformers_logging.disable_default_handler()
    except ImportError:  # a trainer without transformers: only the logs are redirected
        trainer_module = None
    try:
        yield Path(out) / LOG_FILE
    finally:
        if trainer_module is not None and patched is not None:
            trainer_module.DEFAULT_PROGRESS_CALLBACK = patched
        logging.captureWarnings(False)
        handler.flush()
        for logger, handlers, propagate, level in saved:
            logger.handlers = handlers
            logger.propagate = propagate
            logger.setLevel(level)

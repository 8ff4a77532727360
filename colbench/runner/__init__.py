"""The evaluation runner and the run-directory formats."""

from colbench.runner.evaluate import EvalConfig, Runner, episode_seed, evaluate, summarise_records
from colbench.runner.results import EpisodeWriter, load_summary, read_episodes

__all__ = ["EpisodeWriter", "EvalConfig", "Runner", "episode_seed", "evaluate", "load_summary",
           "read_episodes", "summarise_records"]

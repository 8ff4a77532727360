"""``colbench evaluate ENV_ID --model SPEC ...``: run episodes and write results.

Exit status: 0 when the run finished within ``--max-error-rate``; 1 when it finished with too
many model or environment errors, or stopped early because ``--max-consecutive-failures``
episodes in a row failed the same way; 2 for bad input (a flag, a spec, a folder that holds
another run or that another process is writing) and for a model server that, checked once
before the first episode, refuses the connection or does not serve the model.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from colbench import suites
from colbench.errors import ConfigError
from colbench.rundir import DEFAULT_MAX_FIELD_CHARS
from colbench.runner.failures import DEFAULT_MAX_CONSECUTIVE_FAILURES, DEFAULT_MAX_ERROR_RATE
from colbench.terminal import safe_text


def parse_key_values(pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values parsed as YAML scalars)."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{flag} takes KEY=VALUE, got {pair!r}")
        out[key.replace("-", "_")] = yaml.safe_load(value) if value else ""
    return out


def default_out_dir(env_id: str, model: str, split: str, settings: str = "") -> Path:
    """``runs/<env>/<model>/<split>``, with characters unsafe in paths replaced, and the
    run's non-default ``settings`` (:func:`colbench.rundir.settings_label`) after the split:
    ``runs/<env>/<model>/test,protocol=agentgym,temperature=0.7``. The same command always
    names the same folder, so rerunning it resumes; a run with the defaults keeps the plain
    ``<split>`` folder it always had.

    Parameters
    ----------
    env_id, model, split:
        The run's env id, model spec and task split.
    settings:
        The label of the settings that differ from the defaults ('' for none).
    """
    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"

    leaf = safe(split) + (f",{settings}" if settings else "")
    return Path("runs") / safe(env_id) / safe(model) / leaf


def run_settings_label(args: argparse.Namespace, env_kwargs: dict[str, Any],
                       sampling: Any, system_prompt: str | None) -> str:
    """The label of what sets this command's run apart from one with the defaults: every
    setting of the run's identity except env, model, split, and the task count and trials
    (which only extend a run)."""
    from dataclasses import asdict

    from colbench.rundir import settings_label

    options = dict(env_kwargs)
    if args.tasks is not None:
        options.setdefault("tasks", args.tasks)
    return settings_label(env_options=options, sampling=asdict(sampling), seed=args.seed,
                          system_prompt=system_prompt)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate", help="evaluate a model on an env",
        description="Run episodes of ENV_ID with a model and write episodes.jsonl and "
                    "summary.json. Rerunning the same command resumes an interrupted run.")
    p.add_argument("env_id", metavar="ENV_ID", help="env id, e.g. colbench/Backend-v0")
    p.add_argument("--model", required=True, metavar="SPEC",
                   help="model spec: openai:MODEL[@URL], hf:PATH, vllm:PATH, "
                        "python:module:function, scripted:NAME")
    p.add_argument("--tasks", metavar="NAME_OR_FILE",
                   help="task set name or JSONL file (colbench or published ColBench format)")
    p.add_argument("--split", default="test", help="task split (default: test)")
    p.add_argument("--limit", "--num-tasks", dest="num_tasks", type=int, metavar="N",
                   help="run only the first N tasks (a warning says when the set has fewer); "
                        "rerun with a larger N to extend a finished run")
    p.add_argument("--trials", type=int, default=1, metavar="K",
                   help="episodes per task; rerun with a larger K to extend a finished run")
    p.add_argument("--concurrency", type=int, default=8, metavar="C",
                   help="episodes in flight at once (default: 8)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="base seed (default: 0)")
    p.add_argument("--out", "--log-dir", dest="out", type=Path, metavar="DIR",
                   help="run directory (default: runs/<env>/<model>/<split>, followed by the "
                        "settings that differ from the defaults, e.g. "
                        "test,protocol=agentgym,temperature=0.7)")
    p.add_argument("--resume", action="store_true",
                   help="require DIR to hold an interrupted run and go on with it")
    p.add_argument("--overwrite", action="store_true",
                   help="delete the run DIR holds (its run.json, episodes.jsonl and "
                        "summary.json) and start again")
    p.add_argument("--simulator", metavar="SPEC",
                   help="simulated human: 'builtin' (default) or a model spec")
    p.add_argument("--scorer", metavar="NAME",
                   help="scorer of envs that take one: a registered name, or NAME:ARG where "
                        f"it takes one (installed: {', '.join(suites.values('scorers')) or 'none'})")
    p.add_argument("--max-turns", type=int, metavar="N", help="turn budget per episode")
    add_protocol_argument(p)
    p.add_argument("--system-prompt", type=Path, metavar="FILE",
                   help="send this file's text as the system prompt in place of the env's")
    p.add_argument("--temperature", type=float, metavar="T",
                   help="sampling temperature (default: the protocol's where it sets one; "
                        "else 0.0, greedy)")
    p.add_argument("--max-tokens", type=int, metavar="N",
                   help="most tokens the model may write per turn (default: the "
                        "protocol's where it sets one; else 1024)")
    p.add_argument("--env-arg", action="append", metavar="KEY=VALUE",
                   help="extra env option (repeatable)")
    p.add_argument("--max-error-rate", type=float, default=DEFAULT_MAX_ERROR_RATE,
                   metavar="RATE",
                   help="exit with status 1 when more than RATE of the episodes ended in "
                        "model errors (scored 0), or more than RATE in environment errors "
                        f"(not scored) (default: {DEFAULT_MAX_ERROR_RATE:g}; 1 never fails)")
    p.add_argument("--max-consecutive-failures", type=int,
                   default=DEFAULT_MAX_CONSECUTIVE_FAILURES, metavar="N",
                   help="stop the run, with status 1, after N episodes in a row failed the "
                        "same way (a dead model server, a broken sandbox); those N are not "
                        "recorded, so rerunning resumes with them (default: "
                        f"{DEFAULT_MAX_CONSECUTIVE_FAILURES}; 0 never stops)")
    p.add_argument("--max-answer-chars", type=int, metavar="N",
                   help="refuse a model message longer than N characters before the env sees "
                        "it: the model's failure, scored 0 (default: the env's action bound, "
                        "100,000 for the built-in envs)")
    p.add_argument("--max-record-chars", type=int, default=DEFAULT_MAX_FIELD_CHARS, metavar="N",
                   help="cut every text of a record in episodes.jsonl beyond N characters, "
                        "with a marker saying how many were cut; never below "
                        f"--max-answer-chars (default: {DEFAULT_MAX_FIELD_CHARS:,})")
    p.add_argument("--step-timeout", type=float, metavar="SECONDS", dest="step_timeout_s",
                   help="wall-clock bound on each env reset and step: a call past it ends the "
                        "episode as an environment error naming the call (default: the env's "
                        "own, 600 s unless its spec says less)")
    p.add_argument("--unsafe-no-sandbox-isolation", action="store_true",
                   help="where the machine gives the code sandbox no private filesystem view "
                        "or empty network (no root, no user namespaces), run the agents' code "
                        "anyway: it can then read your files and use the network")
    p.add_argument("--require-isolation", choices=["full"], metavar="full",
                   help="refuse to start unless the code sandbox gives full isolation: "
                        "per-job memory and process limits (cgroups this user may write), "
                        "seccomp, and namespaces; the line 'sandbox isolation: ...' printed "
                        "at start says what this machine gives")
    add_executor_arguments(p)
    p.add_argument("--env-url", metavar="URL",
                   help="play envs served by 'colbench serve-envs' at URL instead of making "
                        "them here (token: the COLBENCH_ENV_TOKEN environment variable); "
                        "the records are the same")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """``--executor``, ``--address`` and ``--executor-arg``: where the episodes' envs run
    (colbench/runner/executor.py). ``collect`` takes the same flags."""
    p.add_argument("--executor", default="local", metavar="NAME",
                   help="where the episodes' envs run: 'local' (this process, default) or an "
                        "installed executor such as 'ray' (colbench list executors); results "
                        "are the same either way")
    p.add_argument("--address", metavar="ADDR",
                   help="the Ray cluster to join with --executor ray ('auto', "
                        "'ray://HOST:10001'); without it a local Ray instance is started")
    p.add_argument("--executor-arg", action="append", metavar="KEY=VALUE",
                   help="executor option (repeatable), e.g. envs_per_actor=4, actor_cpus=0.5, "
                        "model_replicas=2 for ray")


def executor_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The executor's options from ``--executor-arg`` and ``--address``; options given to
    the local executor are refused, naming the flag."""
    options = parse_key_values(args.executor_arg, "--executor-arg")
    if args.address is not None:
        if args.executor != "ray":
            raise ConfigError(f"--address names a Ray cluster: it needs --executor ray (got "
                              f"--executor {args.executor})")
        options["address"] = args.address
    if options and args.executor == "local":
        raise ConfigError("--executor-arg needs --executor NAME (the local executor takes no "
                          "options)")
    return options


def flag_used(args: argparse.Namespace, *names: str) -> str:
    """Which of a flag's ``names`` (its aliases) the command line used, for an error that
    names what was typed; the first name when none shows in ``args.cli_argv``."""
    for word in reversed(getattr(args, "cli_argv", None) or []):
        for name in names:
            if word == name or word.startswith(name + "="):
                return name
    return names[0]


def resume_command(args: argparse.Namespace, out: Path) -> str:
    """The command line that resumes this run: the one given (``main`` keeps it in
    ``args.cli_argv``) without ``--overwrite``, which would delete what is done, and with the
    run directory named."""
    import shlex

    words = [word for word in getattr(args, "cli_argv", None) or ["evaluate", args.env_id,
                                                                   "--model", args.model]
             if word != "--overwrite"]
    if args.out is None:
        words += ["--out", str(out)]
    return "colbench " + shlex.join(words)


def add_protocol_argument(p: argparse.ArgumentParser) -> None:
    """``--protocol NAME``, as every command that makes envs takes it.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    """
    p.add_argument("--protocol", metavar="NAME",
                   help="the env's protocol: its default is colbench's own; a named one "
                        "reproduces a published env (installed suites play "
                        f"{protocols_by_suite()})")


def protocols_by_suite() -> str:
    """``suite: protocol, ...; ...`` from the installed suites' manifests, for help texts."""
    listed = [f"{name}: {', '.join(found.protocols)}"
              for name, found in sorted(suites.manifests().items()) if found.protocols]
    return "; ".join(listed) or "none"


def env_kwargs_from_args(args: argparse.Namespace) -> dict[str, Any]:
    kwargs = parse_key_values(args.env_arg, "--env-arg")
    if args.simulator:
        kwargs["simulator"] = args.simulator
    if args.max_turns is not None:
        kwargs["max_turns"] = args.max_turns
    if getattr(args, "scorer", None):
        kwargs["scorer"] = args.scorer
    if getattr(args, "protocol", None):
        kwargs["protocol"] = args.protocol
    return kwargs


def read_system_prompt(path: Path | None) -> str | None:
    """The text of ``--system-prompt FILE`` (None without the flag); a missing or unreadable
    file is a ConfigError naming it."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--system-prompt {path}: cannot read it ({exc})") from exc


def isolation_announcer() -> Any:
    """A run hook that prints, as the run starts, the one line that says what isolation the
    code sandbox gives and what it lacks (to stderr: stdout keeps the results table)."""
    from colbench.runner import RunHooks, Runner
    from colbench.sandbox import isolation_line

    class AnnounceIsolation(RunHooks):
        def on_run_start(self, runner: Runner) -> None:
            # An env that runs none of the agent's code in the sandbox has nothing to say
            # here (summary.json records its isolation as null); an env served elsewhere
            # (--env-url) wrote the record: print it safely.
            if runner.isolation is not None:
                line = isolation_line(runner.isolation, runner.config.env)
                print(f"colbench evaluate: {safe_text(line)}", file=sys.stderr, flush=True)
            # What the protocol says a result under it must know (e.g. that its tasks are
            # not the paper's, and how to import them); summary.json keeps the same notes.
            settings = runner.env_facts.get("protocol_settings") or {}
            for note in settings.get("notes") or ():
                print(f"colbench evaluate: {safe_text(note)}", file=sys.stderr, flush=True)

    return AnnounceIsolation()


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers env ids)
    from colbench.models.base import SamplingParams
    from colbench.protocols import SAMPLING_FIELDS
    from colbench.rundir import RunDir
    from colbench.runner import EvalConfig, evaluate
    from colbench.runner.failures import RunStopped, error_rate_problems
    from colbench.runner.tables import summaries_table

    if args.unsafe_no_sandbox_isolation:
        # The sandbox reads its opt-out from the environment, so the workers it starts, and
        # any env that makes one, see it too; the flag only names the risk on the command line.
        from colbench.sandbox import UNSAFE_ENV

        os.environ[UNSAFE_ENV] = "1"
        print("colbench evaluate: warning: --unsafe-no-sandbox-isolation: agents' code may "
              "run without a private filesystem view or network isolation", file=sys.stderr)
    if not 0 <= args.max_error_rate <= 1:
        raise ConfigError(f"--max-error-rate must be between 0 and 1, got {args.max_error_rate}")
    if args.num_tasks is not None and args.num_tasks < 1:
        raise ConfigError(f"{flag_used(args, '--limit', '--num-tasks')} must be at least 1, "
                          f"got {args.num_tasks}")
    env_kwargs = env_kwargs_from_args(args)
    # A flag left out leaves the setting to the env's protocol (the runner fills it in).
    chosen = {name: getattr(args, name) for name in SAMPLING_FIELDS
              if getattr(args, name) is not None}
    sampling = SamplingParams(**chosen)
    system_prompt = read_system_prompt(getattr(args, "system_prompt", None))
    out = args.out or default_out_dir(args.env_id, args.model, args.split,
                                      run_settings_label(args, env_kwargs, sampling,
                                                         system_prompt))
    if args.resume and args.overwrite:
        raise ConfigError("--resume goes on with the run in DIR and --overwrite deletes it: "
                          "pass one of them")
    if args.resume and not RunDir(out).holds_run():
        raise ConfigError(f"--resume: {out} holds no run to resume")
    config = EvalConfig(
        env=args.env_id, model=args.model, out=out, split=args.split, tasks=args.tasks,
        num_tasks=args.num_tasks, trials=args.trials, concurrency=args.concurrency,
        seed=args.seed, env_kwargs=env_kwargs, sampling=sampling,
        sampling_from_protocol=tuple(name for name in SAMPLING_FIELDS if name not in chosen),
        max_consecutive_failures=args.max_consecutive_failures,
        max_answer_chars=args.max_answer_chars, max_record_chars=args.max_record_chars,
        step_timeout_s=args.step_timeout_s, progress=not args.no_progress, executor=args.executor,
        executor_options=executor_options_from_args(args),
        system_prompt=system_prompt,
        env_url=args.env_url, require_isolation=args.require_isolation)
    if args.overwrite:
        removed, episodes = RunDir(out).clear()
        if removed:
            print(f"colbench evaluate: --overwrite: deleted the run in {out} ({episodes} "
                  f"episode(s); {', '.join(path.name for path in removed)})", file=sys.stderr)
    try:
        summary = evaluate(config, hooks=[isolation_announcer()])
    except KeyboardInterrupt:
        print(f"\ncolbench evaluate: interrupted; the finished episodes are saved in {out}. "
              f"To resume, rerun:\n  {resume_command(args, out)}", file=sys.stderr)
        return 130
    except RunStopped as exc:
        # The message quotes the model's own error, which the model wrote.
        print(f"colbench evaluate: {safe_text(exc)}", file=sys.stderr)
        return 1
    print(summaries_table([(str(out), summary)], details=getattr(args, "verbose", False)))
    counts = summary.counts
    if counts.model_errors or counts.env_errors:
        print(f"{counts.model_errors} episode(s) ended in a model error (scored 0) and "
              f"{counts.env_errors} in an environment error (not scored); see "
              f"{RunDir(out).episodes_path} or 'colbench show {out} --errors'")
    problems = error_rate_problems(counts, args.max_error_rate)
    for problem in problems:
        print(f"colbench evaluate: {problem}", file=sys.stderr)
    return 1 if problems else 0

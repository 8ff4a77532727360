"""Issue 13, item 3: the same isolation without root, from a user namespace; issue 21, item 4:
what that isolation lacks (per-job limits, where cgroups are not this user's) is said aloud.

The cheats that scored as a non-root user before (earlier runs' records under the working
directory, the task cache, the parent's command line and working directory, gc and frames)
must score 0. As root these tests ask for the user-namespace mode explicitly; CI also re-runs
this file as an unprivileged user (``test_the_cheats_score_zero_as_a_non_root_user``). Where
user namespaces are refused, the pool must refuse to start unless the caller accepts the risk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from colbench.errors import EnvironmentFailure
from colbench.sandbox import Sandbox, describe_isolation, isolation_line, values_equal
from colbench.sandbox._pool import missing_isolation, refuse_without_isolation

from .conftest import TEST_LIMITS, assert_healthy

SECRET = "oracle-answer-7f3c9e"
NONROOT_USER = os.environ.get("COLBENCH_TEST_NONROOT_USER", "nobody")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An evaluator's working directory with an earlier run's records and a task cache."""
    root = tmp_path_factory.mktemp("evaluator")
    run = root / "runs" / "earlier"
    run.mkdir(parents=True)
    (run / "episodes.jsonl").write_text(f'{{"answer": "{SECRET}"}}\n')
    cache = root / "cache" / "backend"
    cache.mkdir(parents=True)
    (cache / "tasks.jsonl").write_text(f'{{"ground_truth": "{SECRET}"}}\n')
    yield root


@pytest.fixture(scope="module")
def pool(workdir: Path) -> Iterator[Sandbox]:
    saved_cwd, saved_cache = os.getcwd(), os.environ.get("COLBENCH_CACHE")
    os.chdir(workdir)
    os.environ["COLBENCH_CACHE"] = str(workdir / "cache")
    try:
        as_root = os.geteuid() == 0
        try:
            sandbox = Sandbox(workers=1, limits=TEST_LIMITS, user_namespace=True if as_root else None)
        except EnvironmentFailure as exc:
            if as_root:
                raise
            pytest.skip(f"no user namespaces for this user: {exc}")
        with sandbox:
            yield sandbox
    finally:
        os.chdir(saved_cwd)
        if saved_cache is None:
            os.environ.pop("COLBENCH_CACHE", None)
        else:
            os.environ["COLBENCH_CACHE"] = saved_cache


def score(pool: Sandbox, code: str, calls: list[str]) -> float:
    """The backend's rule: the fraction of calls whose value equals the reference's."""
    verdict = pool.run_calls(code, calls)
    return sum(values_equal(r.value, SECRET) for r in verdict.results if r.ok) / len(calls)


FIND = '''\
import os, re
SECRET = re.compile(r"oracle-answer-[0-9a-f]+")
def grab(path):
    try:
        with open(path, errors="replace") as handle:
            found = SECRET.search(handle.read(1 << 20))
            return found.group(0) if found else None
    except OSError:
        return None
def walk(top, budget=20000):
    for folder, dirs, files in os.walk(top):
        for name in files:
            budget -= 1
            if budget < 0:
                return None
            hit = grab(os.path.join(folder, name))
            if hit:
                return hit
    return None
def known(path):
    return grab(path)
def everywhere():
    for top in ("/tmp", "/home", "/root", "/work", "/var", "/srv", "/mnt", "/proc/1/cwd"):
        hit = walk(top)
        if hit:
            return hit
    return None
def parents():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cwd", "root"):
            hit = walk(f"/proc/{pid}/{what}", 2000)
            if hit:
                return hit
        hit = grab(f"/proc/{pid}/cmdline") or grab(f"/proc/{pid}/environ")
        if hit:
            return hit
    return None
'''


def test_the_pool_isolates_without_root_privileges(pool: Sandbox) -> None:
    report = pool.isolation
    assert report["mode"] == "user-namespace", report["notes"]
    assert report["private_root"] and report["network_namespace"] and report["pid_namespace"]
    assert missing_isolation(report) == []
    ids = pool.run_calls("import os\n", ["os.getuid() != 0", "open('/proc/self/status')"
                                          ".read().split('CapEff:')[1].split()[0]"])
    assert [r.value for r in ids.results] == [True, "0000000000000000"]
    assert_healthy(pool)


def test_earlier_runs_under_the_working_directory_score_zero(pool: Sandbox,
                                                             workdir: Path) -> None:
    run = workdir / "runs" / "earlier" / "episodes.jsonl"
    assert score(pool, FIND, [f"known({str(run)!r})", "everywhere()",
                              "walk(os.path.expanduser('~'))"]) == 0


def test_the_task_cache_scores_zero(pool: Sandbox, workdir: Path) -> None:
    cached = workdir / "cache" / "backend" / "tasks.jsonl"
    assert score(pool, FIND, [f"known({str(cached)!r})",
                              "walk(os.path.expanduser('~/.cache'))",
                              "walk('/root/.cache')"]) == 0


def test_the_parents_command_line_and_working_directory_score_zero(pool: Sandbox) -> None:
    code = FIND + "def cmdlines():\n    return [grab(f'/proc/{p}/cmdline') for p in " \
                  "os.listdir('/proc') if p.isdigit()]\n"
    verdict = pool.run_calls(code, ["parents()", f"known('/proc/{os.getpid()}/cmdline')",
                                    f"walk('/proc/{os.getpid()}/cwd')"])
    assert sum(values_equal(r.value, SECRET) for r in verdict.results if r.ok) == 0
    # The evaluator itself is not even visible.
    pids = pool.run_calls("import os\n", ["sorted(int(p) for p in os.listdir('/proc') "
                                          "if p.isdigit())"]).results[0].value
    assert os.getpid() not in pids or len(pids) <= 2


def test_gc_and_frames_score_zero(pool: Sandbox) -> None:
    reference = {"ground_truth": f"def f():\n    return {SECRET!r}\n"}  # held by the evaluator
    assert reference
    code = ('import gc, sys\n'
            'def from_gc():\n'
            '    for thing in gc.get_objects():\n'
            '        text = repr(thing) if isinstance(thing, (dict, list, tuple)) else ""\n'
            '        if "oracle-answer-" in text:\n'
            '            return text[text.index("oracle-answer-"):][:20]\n'
            'def from_frames():\n'
            '    frame = sys._getframe()\n'
            '    while frame is not None:\n'
            '        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):\n'
            '            if isinstance(value, str) and "oracle-answer-" in value:\n'
            '                return value\n'
            '        frame = frame.f_back\n')
    assert score(pool, code, ["from_gc()", "from_frames()"]) == 0


NO_JOB_LIMITS = "no per-job memory or process limit"


def test_the_isolation_record_names_what_is_missing(pool: Sandbox) -> None:
    """Without per-job cgroups (as an unprivileged user here: cgroup v1 refuses, v2 offers
    no controllers) the record says partial and names the missing limit and why."""
    record = describe_isolation(pool.isolation)
    assert record["mode"] == "user-namespace"
    assert {"private read-only filesystem view", "no network",
            "own PID namespace"} <= set(record["in_force"])
    if pool.isolation["cgroup"] is not None:  # a machine that delegates cgroups to the user
        assert record["level"] == "full" and record["missing"] == []
        return
    assert record["level"] == "partial"
    (missing,) = [m for m in record["missing"] if m.startswith(NO_JOB_LIMITS)]
    assert "limited per process only" in missing
    if os.geteuid() != 0:
        assert "cgroups not writable as this user" in missing
    line = isolation_line(record)
    assert line.startswith("sandbox isolation: partial (user-namespace mode") and missing in line


def _evaluate(out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``colbench evaluate`` in a process of its own: a fresh process-wide pool, in the
    user-namespace mode (the default without root; asked for as root). Its home and task
    cache are folders of the test (not the pool fixture's cache, nor a home the user of the
    re-run may lack)."""
    env = {**os.environ, "HOME": str(out.parent), "COLBENCH_CACHE": str(out.parent / "cache")}
    if os.geteuid() == 0:
        env["COLBENCH_SANDBOX_USERNS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "colbench", "evaluate", "colbench/Backend-v0", "--model",
         "scripted:oracle", "--limit", "2", "--no-progress", "--out", str(out), *flags],
        cwd=out.parent, env=env, capture_output=True, text=True, timeout=240)


def test_evaluate_prints_and_records_the_missing_limits(tmp_path: Path) -> None:
    ran = _evaluate(tmp_path / "run")
    assert ran.returncode == 0, ran.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "summary.json").read_text())["isolation"]
    assert record["mode"] == "user-namespace"
    if record["level"] == "full":
        pytest.skip("this machine gives this user per-job cgroups: nothing is missing")
    assert record["level"] == "partial"
    assert any(m.startswith(NO_JOB_LIMITS) for m in record["missing"])
    # One line at the start of the run says the same.
    (line,) = [text for text in ran.stderr.splitlines() if "sandbox isolation:" in text]
    assert line == f"colbench evaluate: {isolation_line(record)}"

    refused = _evaluate(tmp_path / "strict", "--require-isolation", "full")
    assert refused.returncode == 2
    assert "--require-isolation full: the code sandbox gives partial isolation" in refused.stderr
    assert NO_JOB_LIMITS in refused.stderr
    assert not (tmp_path / "strict").exists()  # refused before anything was written


def test_without_isolation_the_pool_refuses_unless_the_risk_is_accepted() -> None:
    weak = {"mode": "none", "private_root": False, "network_namespace": True,
            "notes": ["no user namespace (Operation not permitted)"]}
    assert len(missing_isolation(weak)) == 1
    with pytest.raises(EnvironmentFailure) as caught:
        refuse_without_isolation(weak)
    message = str(caught.value)
    assert "refuses to run untrusted code" in message and "no private filesystem view" in message
    assert "unsafe_no_isolation=True" in message and "COLBENCH_UNSAFE_NO_ISOLATION=1" in message
    assert "no user namespace (Operation not permitted)" in message  # what is missing
    refuse_without_isolation({"private_root": True, "network_namespace": True})


@pytest.mark.skipif(os.geteuid() == 0, reason="a real refusal needs a user without root")
def test_a_user_without_namespaces_is_refused_unless_the_flag_is_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBENCH_SANDBOX_USERNS", "0")
    with pytest.raises(EnvironmentFailure, match="refuses to run untrusted code"):
        Sandbox(workers=1, limits=TEST_LIMITS)
    with Sandbox(workers=1, limits=TEST_LIMITS, unsafe_no_isolation=True) as pool:
        assert pool.isolation["mode"] == "none" and not pool.isolation["private_root"]
        assert_healthy(pool)


@pytest.mark.skipif(os.geteuid() != 0, reason="re-runs this file as a non-root user")
def test_the_cheats_score_zero_as_a_non_root_user(request: pytest.FixtureRequest) -> None:
    """CI runs as root: this re-runs the file as ``COLBENCH_TEST_NONROOT_USER`` (default
    nobody). ``.ci/setup`` makes the interpreter reachable for that user."""
    runuser = shutil.which("runuser")
    reachable = subprocess.run(
        [runuser or "runuser", "-u", NONROOT_USER, "--", sys.executable, "-c",
         "import colbench.sandbox"], capture_output=True) if runuser else None
    if reachable is None or reachable.returncode != 0:
        reason = (f"cannot run this interpreter as {NONROOT_USER}: "
                  f"{reachable.stderr.decode()[-300:] if reachable else 'no runuser'}"
                  " (bash .ci/setup makes it reachable)")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    # Its own HOME, outside root's private pytest folder (which that user cannot enter).
    home = Path(tempfile.mkdtemp(prefix="colbench-nonroot-"))
    shutil.chown(home, NONROOT_USER)
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(home)}
    result = subprocess.run(
        [runuser, "-u", NONROOT_USER, "--", sys.executable, "-m", "pytest", "-q", "-rs",
         "-p", "no:cacheprovider", "--basetemp", str(home / "pytest"),
         "-k", "not as_a_non_root_user", "tests/sandbox/test_unprivileged.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # Every cheat ran as that user: none was skipped for want of a user namespace.
    assert "no user namespaces for this user" not in result.stdout, result.stdout[-2000:]
    assert "9 passed" in result.stdout, result.stdout[-2000:]

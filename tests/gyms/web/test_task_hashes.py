"""The task generators, rewritten as tables of task kinds (issue 27), produce exactly the task
sets the hand-written generators did: every site's tasks of every split hash to the value they
had before the rewrite."""

from __future__ import annotations

import pytest

pytest.importorskip("flask", reason="the web gym needs colbench[web]")

from colbench.gyms.web.taskgen import build_tasks  # noqa: E402
from colbench.tasks import hash_tasks  # noqa: E402

#: ``(site, split) -> (task count, hash)`` of the generators' output before the rewrite.
BEFORE: dict[tuple[str, str], tuple[int, str]] = {
    ("shop", "train"): (107, "sha256:3d4c55d9075872f78f2425816b06c2372501ec81c93e73b70bc132fb0324175a"),
    ("shop", "test"): (51, "sha256:e3a2264628c8db4e6696a2cf11d1634a280d272f21bd6f39961ff00d1d8aef24"),
    ("forum", "train"): (81, "sha256:ad249f54a401b86c4914b5791084305d38d77fb5ce0dca5bf74ba22f5543cbaa"),
    ("forum", "test"): (42, "sha256:103270cdccf78c2b62248005178d39a9a735458904704313701a6c22bc4801b9"),
    ("admin", "train"): (84, "sha256:0ffbb2b6563c89d5dacba93d5fe6a081bc2016c8870dda1d10e8de98d6ccac72"),
    ("admin", "test"): (38, "sha256:5024d1b69b27e37330f8a266dd067c881e1a5fa162eef0e4fb2d526f0f9403e3"),
}


@pytest.fixture(scope="module")
def built() -> dict[str, list]:
    return build_tasks()


@pytest.mark.parametrize(("site", "split"), sorted(BEFORE))
def test_generated_tasks_are_those_of_before_the_rewrite(built, site: str, split: str) -> None:
    tasks = [t for t in built[split] if t.metadata["site"] == site]
    assert (len(tasks), hash_tasks(tasks)) == BEFORE[site, split]

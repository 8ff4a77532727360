"""The web gym's task sets, checkers and sites, without a browser: the tasks are many, split,
up to date with the seeds, solvable in principle and not already solved; checkers judge
answers, pages and database state; a site's data is restored exactly."""

from __future__ import annotations

import sqlite3
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("flask", reason="the web gym needs colbench[web]")
pytest.importorskip("playwright", reason="the web gym needs colbench[web]")

from colbench.errors import ConfigError  # noqa: E402
from colbench.gyms.web.checkers import (  # noqa: E402
    EpisodeEnd,
    check_answer,
    check_url,
    contains_item,
    evaluate,
    goal_reached,
    run_conditions,
    validate_check,
)
from colbench.gyms.web.site_process import SiteProcess, pristine_db  # noqa: E402
from colbench.gyms.web.sites import SITE_NAMES, site_module  # noqa: E402
from colbench.gyms.web.sites.common import session_cookie_value  # noqa: E402
from colbench.gyms.web.taskgen import main as taskgen_main  # noqa: E402
from colbench.gyms.web.tasks import KINDS, load_web_tasks  # noqa: E402

from .helpers import dump  # noqa: E402


@pytest.fixture(scope="module")
def splits():
    return {split: load_web_tasks(split) for split in ("train", "test")}


def test_task_sets_are_large_split_and_cover_every_kind_and_site(splits) -> None:
    train, test = splits["train"], splits["test"]
    assert len(train) + len(test) >= 300
    assert not set(train.ids()) & set(test.ids())
    for task_set in (train, test):
        kinds = Counter(t.metadata["kind"] for t in task_set)
        sites = Counter(t.privileged["site"] for t in task_set)
        assert set(kinds) == set(KINDS)
        assert set(sites) == set(SITE_NAMES)
    families_train = Counter(t.metadata["family"] for t in train)
    families_test = Counter(t.metadata["family"] for t in test)
    for family, n in (families_train + families_test).items():
        if n >= 2:
            assert family in families_train and family in families_test, family


def test_shipped_task_files_match_the_generators() -> None:
    # Fails when a site's seed changed without regenerating (python -m colbench.gyms.web.taskgen).
    assert taskgen_main(["--check"]) == 0


def test_every_task_has_a_valid_check_and_a_plan(splits) -> None:
    for task_set in splits.values():
        for task in task_set:
            validate_check(task.privileged["check"])
            plan = task.privileged["plan"]
            assert plan, task.id
            kind = task.metadata["kind"]
            if kind == "info":
                assert plan[-1]["do"] == "answer", task.id
            if kind == "infeasible":
                assert plan[-1]["do"] == "infeasible", task.id
            assert task.prompt not in str(task.privileged["check"].get("must_include", ""))


def test_no_goal_holds_before_the_agent_acts(splits) -> None:
    # A state or navigation goal that held at reset would hand out free successes; the
    # conditions that infeasible tasks keep must hold (nothing changed yet).
    for task_set in splits.values():
        for task in task_set:
            check = task.privileged["check"]
            db = pristine_db(task.privileged["site"])
            start = "http://127.0.0.1:1" + task.privileged["start_url"]
            assert not goal_reached(check, url=start, db_path=db), task.id
            if check["type"] == "infeasible" and check.get("conditions"):
                ok, failed = run_conditions(check["conditions"], db)
                assert not failed, (task.id, failed)


def test_per_site_task_sets_and_bad_names() -> None:
    shop = load_web_tasks("test", sites=["shop"])
    assert {t.privileged["site"] for t in shop} == {"shop"}
    with pytest.raises(ConfigError, match="unknown web site"):
        load_web_tasks("test", sites=["bank"])
    with pytest.raises(ConfigError, match="splits"):
        load_web_tasks("validation")


@pytest.mark.parametrize("text, item, found", [
    ("It costs $12.50.", "12.50", True),
    ("It costs $1,234.50 in total", "1234.50", True),
    ("There are 13 of them", "3", False),
    ("There are 3.5 of them", "3", False),
    ("There are 3 of them", "3", True),
    ("THE ORCHID KITE", "Orchid Kite", True),
    ("Orchid Kites", "Orchid Kite", False),
    ("Order #1011 is pending", "1011", True),
])
def test_answer_items_match_whole_words_and_numbers(text: str, item: str, found: bool) -> None:
    assert contains_item(text, item) is found


def test_answer_check_gives_partial_credit_and_accepts_alternatives() -> None:
    check = {"type": "answer", "must_include": [["12.50", "12.5"], "Maple Kite"]}
    assert check_answer(check, "The Maple Kite costs $12.5").success
    half = check_answer(check, "It costs 12.50")
    assert not half.success and half.partial == 0.5
    assert check_answer(check, None).partial == 0.0


def test_url_check_compares_path_and_listed_parameters() -> None:
    check = {"type": "url", "path": "/search", "query": {"category": "kitchen",
                                                         "max_price": "50", "q": ""}}
    good = "http://127.0.0.1:9/search?q=&category=kitchen&max_price=50.00&sort=name"
    assert check_url(check, good).success
    wrong = check_url(check, "http://127.0.0.1:9/search?category=books&max_price=50&q=mug")
    assert not wrong.success and wrong.partial == pytest.approx(2 / 4)
    assert not check_url({"type": "url", "path": "/cart"}, "http://127.0.0.1:9/").success


def test_db_and_infeasible_checks(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2);")
    conn.commit()
    conn.close()
    holds = {"sql": "SELECT COUNT(*) FROM t", "expect": [[2]]}
    fails = {"sql": "SELECT a FROM t ORDER BY a", "expect": [[1]]}
    result = evaluate({"type": "db", "conditions": [holds, fails]}, url="", db_path=db,
                      end=EpisodeEnd())
    assert not result.success and result.partial == 0.5 and "got [[1], [2]]" in result.failed[0]
    infeasible = {"type": "infeasible", "conditions": [holds]}
    assert evaluate(infeasible, url="", db_path=db, end=EpisodeEnd(infeasible="no")).success
    assert not evaluate(infeasible, url="", db_path=db, end=EpisodeEnd(answer="no")).success
    # Reporting a feasible task as infeasible fails it even if its state happens to hold.
    assert not evaluate({"type": "db", "conditions": [holds]}, url="", db_path=db,
                        end=EpisodeEnd(infeasible="cannot")).success
    with pytest.raises(ValueError, match="SELECT"):
        validate_check({"type": "db", "conditions": [{"sql": "DELETE FROM t", "expect": []}]})


@pytest.mark.parametrize("site", SITE_NAMES)
def test_site_pages_render_for_the_signed_in_user(site: str, tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "site.sqlite"
    shutil.copyfile(pristine_db(site), db)
    app = site_module(site, "app").create_app(db, "secret")
    client = app.test_client()
    with client.session_transaction() as session:
        session["user_id"] = 1
    paths = {"shop": ["/", "/search?category=kitchen&sort=price_asc", "/product/5", "/cart",
                      "/checkout", "/orders", "/account", "/wishlist", "/policies/returns"],
             "forum": ["/", "/b/gardening?sort=top", "/t/3", "/new", "/search?q=compost",
                       "/members", "/u/nadia", "/settings", "/subscriptions"],
             "admin": ["/", "/articles?status=draft", "/articles/3", "/articles/3/edit",
                       "/articles/new", "/sections", "/users", "/users/4", "/settings",
                       "/audit"]}[site]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["Cache-Control"] == "no-store"
    assert client.get("/no/such/page").status_code == 404


def test_site_process_serves_changes_and_restore_is_exact(tmp_path: Path) -> None:
    proc = SiteProcess("forum", tmp_path)
    proc.start()
    try:
        cookie = session_cookie_value(proc.secret, {"user_id": 1})
        data = urllib.parse.urlencode({"body": "A reply from the test"}).encode()
        request = urllib.request.Request(proc.origin + "/t/3/reply", data=data,
                                         headers={"Cookie": f"session={cookie}"})
        with urllib.request.urlopen(request) as response:
            assert "A reply from the test" in response.read().decode()
        assert dump(proc.db_path) != dump(pristine_db("forum"))
        proc.restore()
        assert dump(proc.db_path) == dump(pristine_db("forum"))
        with urllib.request.urlopen(proc.origin + "/t/3") as response:
            assert "A reply from the test" not in response.read().decode()
    finally:
        proc.stop()
    assert not proc.alive()

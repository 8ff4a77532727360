"""The sites as blueprints per area (issue 27): the links between areas still lead where they
did: a page that needs signing in sends a visitor to the sign-in page and back, signing out
lands on the site's front (or sign-in) page, and a form posted in one area redirects into
another."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("flask", reason="the web gym needs colbench[web]")

from colbench.gyms.web.site_process import pristine_db  # noqa: E402
from colbench.gyms.web.sites import SITE_NAMES, site_module  # noqa: E402

#: Per site: the sign-in form's fields, a page that needs signing in, where signing out goes.
ACCOUNTS = {
    "shop": ({"username": "emma", "password": "password123"}, "/orders", "/"),
    "forum": ({"username": "sam", "password": "password123"}, "/settings", "/"),
    "admin": ({"email": "morgan.reyes@ledger.example", "password": "password123"}, "/users",
              "/login"),
}


def _client(site: str, tmp_path: Path):
    db = tmp_path / "site.sqlite"
    shutil.copyfile(pristine_db(site), db)
    return site_module(site, "app").create_app(db, "secret").test_client()


@pytest.mark.parametrize("site", SITE_NAMES)
def test_sign_in_and_out_lead_where_they_did(site: str, tmp_path: Path) -> None:
    form, private, after_logout = ACCOUNTS[site]
    client = _client(site, tmp_path)
    response = client.get(private)
    assert response.status_code == 302
    assert response.headers["Location"] == f"/login?next={private}"
    wrong = client.post(f"/login?next={private}", data={**form, "password": "nope"})
    assert wrong.status_code == 200 and "or password." in wrong.get_data(as_text=True)
    signed_in = client.post(f"/login?next={private}", data=form)
    assert signed_in.headers["Location"] == private
    assert client.get(private).status_code == 200
    signed_out = client.post("/logout")
    assert signed_out.headers["Location"] == after_logout
    assert client.get(private).status_code == 302
    assert client.get("/no/such/page").status_code in (302, 404)


@pytest.mark.parametrize(("site", "path", "data", "target"), [
    ("shop", "/cart/add", {"product_id": "5", "quantity": "1"}, "/product/5"),
    ("shop", "/wishlist/move", {"product_id": "7", "back": "/cart"}, "/cart"),
    ("forum", "/t/3/reply", {"body": "Thanks!"}, "/t/3"),
    ("forum", "/settings", {"display_name": "Sam", "email_digest": "daily"}, "/settings"),
    ("admin", "/users/new", {"name": "New", "email": "new@ledger.example", "role": "author"},
     "/users/19"),
])
def test_forms_redirect_into_the_right_area(site: str, path: str, data: dict[str, str],
                                            target: str, tmp_path: Path) -> None:
    client = _client(site, tmp_path)
    with client.session_transaction() as session:
        session["user_id"] = 1
    response = client.post(path, data=data)
    assert response.status_code == 302 and response.headers["Location"] == target
    assert client.get(target).status_code == 200

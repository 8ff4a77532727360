"""The web gym's blind baseline: it reads only the chat, scores between 0 and the oracle, and
acts only on elements the page shows."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright", reason="the web gym needs colbench[web]")

from baseline_checks import check_blind_baseline  # noqa: E402

from colbench.errors import EnvironmentFailure  # noqa: E402
from colbench.gyms.web.baselines import WebRandom  # noqa: E402


@pytest.fixture(scope="module")
def shop_env():
    """The shop site in a real browser (skipped where no Chromium is installed)."""
    from colbench.chromium import find_chromium
    from colbench.gyms.web.env import WebEnv

    try:
        find_chromium()
    except EnvironmentFailure as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"no Chromium: {exc}")
    env = WebEnv(split="test", sites=["shop"], max_turns=8)
    yield env
    env.close()


PAGE = """# Goal
Find the Tundra Sneakers.

# URL
http://127.0.0.1:1/

# Page
RootWebArea "Home"
  [1] link "Home" url="/"
  heading "Welcome" level=1
  [8] searchbox "Search products"
  [9] button "Search"
  [12] spinbutton "Quantity" value="1"
"""


def test_web_random_is_blind_and_below_the_oracle(shop_env):
    check_blind_baseline(shop_env, "random", shop_env.tasks.ids()[:2])


def test_web_random_acts_only_on_the_pages_elements():
    actions = WebRandom(seed=3).valid_actions([{"role": "user", "content": PAGE}])
    assert actions[0] == 'click("1")' and actions[2] == 'click("9")'
    assert actions[1].startswith('fill("8", "') and actions[1].split('"')[3] in {
        "Find", "the", "Tundra", "Sneakers"}
    assert actions[3] == 'fill("12", "1")'
    assert actions[4:] == ["go_back()", 'scroll("down")']

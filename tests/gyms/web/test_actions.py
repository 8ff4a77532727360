"""The web gym's action language and page-tree text: parsed safely, errors that say what was
wrong, trees an agent (and the oracle) can read back."""

from __future__ import annotations

import pytest

pytest.importorskip("flask", reason="the web gym needs colbench[web]")
pytest.importorskip("playwright", reason="the web gym needs colbench[web]")

from colbench.gyms.web.actions import ACTIONS, Action, ActionError, parse_action  # noqa: E402
from colbench.gyms.web.axtree import DomInfo, parse_tree, render_tree  # noqa: E402
from colbench.gyms.web.oracle import find_element, page_nodes, step_action  # noqa: E402


@pytest.mark.parametrize("message, name, args", [
    ('click("12")', "click", {"bid": "12"}),
    ("click(12)", "click", {"bid": "12"}),
    ("click('[7]')", "click", {"bid": "7"}),
    ('fill("4", "blue mug")', "fill", {"bid": "4", "text": "blue mug"}),
    ('fill(bid="4", text="x")', "fill", {"bid": "4", "text": "x"}),
    ('select_option("3", "Price: low to high")', "select_option",
     {"bid": "3", "value": "Price: low to high"}),
    ('select_option("3", ["a", "b"])', "select_option", {"bid": "3", "value": ["a", "b"]}),
    ('press("Enter")', "press", {"key": "Enter"}),
    ('press("5", "Enter")', "press", {"bid": "5", "key": "Enter"}),
    ('scroll("DOWN")', "scroll", {"direction": "down"}),
    ('goto("/cart")', "goto", {"url": "/cart"}),
    ("go_back()", "go_back", {}),
    ("tab_focus(1)", "tab_focus", {"index": 1}),
    ("tab_close()", "tab_close", {}),
    ('send_msg_to_user("It costs $12.50")', "send_msg_to_user", {"text": "It costs $12.50"}),
    ("send_msg_to_user(42)", "send_msg_to_user", {"text": "42"}),
    ('report_infeasible("sold out")', "report_infeasible", {"reason": "sold out"}),
])
def test_valid_actions_parse(message: str, name: str, args: dict) -> None:
    assert parse_action(message) == Action(name, args)


def test_action_is_found_after_free_text_or_in_a_fence() -> None:
    assert parse_action('The cart link is [5].\nclick("5")') == Action("click", {"bid": "5"})
    fenced = 'I will search.\n```python\nfill("8", "kettle")\n```\nThat should work.'
    assert parse_action(fenced) == Action("fill", {"bid": "8", "text": "kettle"})
    # The last fenced block wins: it is the model's final decision.
    two = '```\nclick("1")\n```\nno, rather\n```\nclick("2")\n```'
    assert parse_action(two) == Action("click", {"bid": "2"})


@pytest.mark.parametrize("message", [
    'Action: click("5")',
    'Thought:\nThe cart link is [5].\n\nAction:\nclick("5")',
    'The cart link is [5].\n**Action:** click("5")\nThat opens the cart.',
])
def test_action_is_found_after_an_action_label(message: str) -> None:
    assert parse_action(message) == Action("click", {"bid": "5"})


@pytest.mark.parametrize("message, expected", [
    ("", "empty"),
    ("   ", "empty"),
    ("click(", "could not parse"),
    ("hello there", "could not parse"),
    ("hello", "not an action call"),
    ("fill(\"4\")", "missing text"),
    ("click(\"1\", \"2\", \"3\")", "at most"),
    ("click(\"1\"); click(\"2\")", "exactly one action"),
    ("open_url(\"/x\")", "unknown action 'open_url'"),
    ("os.system(\"rm -rf /\")", "bare name"),
    ("__import__(\"os\").system(\"x\")", "bare name"),
    ("click(x)", "must be a literal"),
    ("click(1 + 1)", "must be a literal"),
    ("click(\"a12\")", "is not an element id"),
    ("click(True)", "element id must be"),
    ("scroll(\"sideways\")", "direction must be one of"),
    ("tab_focus(\"first\")", "index must be a tab number"),
    ("select_option(\"3\", {\"a\": 1})", "value must be a string"),
    ("fill(\"3\", text=\"a\", text=\"b\")", "two values for 'text'"),
    ("click(bid=\"1\", colour=\"red\")", "no argument 'colour'"),
    ("press(\"\")", "key is empty"),
    ("send_msg_to_user(**{\"text\": \"x\"})", "not allowed"),
    ("(" * 5000 + ")" * 5000, "could not parse"),
])
def test_malformed_actions_say_what_is_wrong(message: str, expected: str) -> None:
    with pytest.raises(ActionError) as info:
        parse_action(message)
    assert expected in str(info.value)


def test_parsing_never_evaluates(tmp_path) -> None:
    marker = tmp_path / "ran"
    message = f"open({str(marker)!r}, 'w').write('x')"
    with pytest.raises(ActionError):
        parse_action(message)
    with pytest.raises(ActionError):
        parse_action(f"click(open({str(marker)!r}, 'w'))")
    assert not marker.exists()


def test_every_action_has_a_documented_signature() -> None:
    for spec in ACTIONS.values():
        assert spec.doc and spec.signature().startswith(spec.name + "(")


def _ax(node_id: str, role: str, name: str = "", children=(), backend: int | None = None,
        parent: str | None = None, ignored: bool = False, **extra) -> dict:
    node = {"nodeId": node_id, "role": {"value": role}, "name": {"value": name},
            "childIds": list(children), "ignored": ignored, **extra}
    if backend is not None:
        node["backendDOMNodeId"] = backend
    if parent is not None:
        node["parentId"] = parent
    return node


def test_tree_shows_ids_values_and_text_and_drops_noise() -> None:
    nodes = [
        _ax("1", "RootWebArea", "Cart", ["2", "3", "6", "9"]),
        _ax("2", "generic", "", ["4"], parent="1"),
        _ax("4", "link", "Home", ["5"], backend=40, parent="2"),
        _ax("5", "StaticText", "Home", parent="4"),
        _ax("3", "paragraph", "", ["7", "8"], parent="1"),
        _ax("7", "StaticText", "Price: ", parent="3"),
        _ax("8", "StaticText", "$12.00", parent="3"),
        _ax("6", "StaticText", "Quantity", parent="1"),
        _ax("9", "spinbutton", "Quantity", [], backend=90, parent="1",
            value={"type": "number", "value": 2}),
    ]
    dom = DomInfo(ids={40: "1", 90: "2"}, hrefs={40: "http://127.0.0.1:5000/"})
    text = render_tree(nodes, dom, origin="http://127.0.0.1:5000")
    assert text.splitlines() == [
        'RootWebArea "Cart"',
        '  [1] link "Home" url="/"',
        '  paragraph "Price: $12.00"',
        '  [2] spinbutton "Quantity" value="2"',
    ]
    parsed = parse_tree(text)
    assert [(n.bid, n.role, n.name) for n in parsed] == [
        (None, "RootWebArea", "Cart"), ("1", "link", "Home"), (None, "paragraph",
                                                                "Price: $12.00"),
        ("2", "spinbutton", "Quantity")]


def test_tree_quotes_names_so_they_parse_back() -> None:
    tricky = 'Say "hi" \\ to [3] link'
    nodes = [_ax("1", "RootWebArea", "T", ["2"]),
             _ax("2", "button", tricky, [], backend=5, parent="1")]
    text = render_tree(nodes, DomInfo(ids={5: "3"}))
    assert parse_tree(text)[1].name == tricky


def test_oracle_steps_find_elements_by_role_and_name() -> None:
    observation = ("# Goal\nx\n\n# Page\n"
                   'RootWebArea "Shop"\n  [4] link "Cart (2)" url="/cart"\n'
                   '  [5] button "Remove Maple Kite"\n  [6] button "Remove Maple Kite"\n'
                   '  [7] combobox "Sort by" value="Name"')
    nodes = page_nodes(observation)
    assert find_element(nodes, {"role": "link", "prefix": "Cart ("}).bid == "4"
    assert find_element(nodes, {"role": "button", "name": "Remove Maple Kite", "nth": 1}).bid == "6"
    assert step_action({"do": "click", "role": "link", "prefix": "Cart"}, observation) == \
        'click("4")'
    assert step_action({"do": "select", "role": "combobox", "name": "Sort by",
                        "value": "Price: low to high"}, observation) == \
        'select_option("7", "Price: low to high")'
    missing = step_action({"do": "click", "role": "button", "name": "Checkout"}, observation)
    assert missing.startswith("report_infeasible(")
    assert parse_action(step_action({"do": "answer", "text": 'a "quoted" answer'}, "")) == \
        Action("send_msg_to_user", {"text": 'a "quoted" answer'})

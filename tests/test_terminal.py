"""``colbench.terminal.safe_text``: untrusted text rendered so that a terminal only shows it."""

from __future__ import annotations

import pytest

from colbench.terminal import safe_text

# What an answer can do to a terminal that prints it as it is.
WINDOW_TITLE = "\x1b]0;owned\x07"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x1b\\"
CLEAR_SCREEN = "\x1b[2J\x1b[H"
FAKE_PASSED = "\x1b[32mPASSED\x1b[0m"
C1_CSI_OSC = "\x9b2J\x9d0;title\x9c"


def no_controls(text: str) -> bool:
    """True when ``text`` holds no character a terminal acts on but newline and tab."""
    return all(ch in "\n\t" or not (ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0) for ch in text)


@pytest.mark.parametrize("attack", [WINDOW_TITLE, CLIPBOARD, CLEAR_SCREEN, FAKE_PASSED,
                                    C1_CSI_OSC])
def test_escape_sequences_are_shown_not_obeyed(attack):
    shown = safe_text(f"before {attack} after")
    assert no_controls(shown)
    assert shown.startswith("before ") and shown.endswith(" after")
    assert "\\x1b" in shown or "\\x9b" in shown


def test_each_kind_of_control_reads_as_its_escape():
    assert safe_text(FAKE_PASSED) == "\\x1b[32mPASSED\\x1b[0m"
    assert safe_text("\x9b2J\x9d") == "\\x9b2J\\x9d"
    assert safe_text("done\rPASSED") == "done\\rPASSED"  # no overwriting the line
    assert safe_text("\x00\x07\x08\x7f") == "\\x00\\x07\\x08\\x7f"
    # Marks that reorder what is shown (Trojan Source) and lone surrogates, which print()
    # could not even encode.
    assert safe_text("a\u202eb\u2066c") == "a\\u202eb\\u2066c"
    assert safe_text("x\ud800y") == "x\\ud800y"
    safe_text("x\udfffy").encode("utf-8")


def test_layout_is_kept_where_it_is_needed_and_escaped_on_one_line():
    text = "def f():\n\treturn 1\n"
    assert safe_text(text) == text
    assert safe_text(text, multiline=False) == "def f():\\n\\treturn 1\\n"


def test_ordinary_text_is_unchanged():
    text = "naïve café — 東京 🙂 C:\\path\\x1b is only text"
    assert safe_text(text) == text
    assert safe_text(3.5) == "3.5"

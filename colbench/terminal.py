"""Printing untrusted text to a terminal without letting it drive the terminal.

An agent's message, an env's observation, a task's prompt or an error that quotes an answer
can hold control characters: ``ESC ] 0 ;`` retitles the window, ``ESC ] 52 ;`` writes the
clipboard, ``ESC [ 2 J`` clears the screen, ``ESC [ 32 m`` paints a fake green ``PASSED``, a
carriage return overwrites the line already printed. A terminal obeys them all. Every command
that prints such text (``colbench show``, ``play``, ``report``, the runner's tables, the CLI's
error messages) passes it through :func:`safe_text` first, so those characters are shown,
never obeyed. Files keep the text as it was: only what reaches a terminal is rendered.

What is rendered visibly, as the escape a Python string literal would use:

* C0 controls (U+0000 to U+001F) except newline and tab, which layouts need (with
  ``multiline=False`` those two are escaped as well, for one-line cells and headers);
  ESC prints as ``\\x1b``, carriage return as ``\\r``, newline and tab as ``\\n`` and ``\\t``;
* DEL (U+007F) and the C1 controls (U+0080 to U+009F): a terminal reads U+009B as CSI and
  U+009D as OSC, the one-character forms of ``ESC [`` and ``ESC ]``;
* the bidirectional embedding, override and isolate marks (U+202A to U+202E, U+2066 to
  U+2069), which reorder what is shown so that the text on screen differs from the text;
* lone surrogates (U+D800 to U+DFFF), which a record read with ``surrogatepass`` may hold and
  which would otherwise stop ``print`` with a UnicodeEncodeError.

Backslashes are left alone: code is full of them, and a visible ``\\x1b`` that was typed as
text is as harmless as one this function wrote.
"""

from __future__ import annotations

__all__ = ["safe_text"]

_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _visible(code_point: int) -> str:
    if code_point in _NAMED:
        return _NAMED[code_point]
    if code_point <= 0xFF:
        return f"\\x{code_point:02x}"
    return f"\\u{code_point:04x}"


def _escape_table(*, keep_layout: bool) -> dict[int, str]:
    controls = [*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F),
                *range(0x2066, 0x206A), *range(0xD800, 0xE000)]
    kept = {0x0A, 0x09} if keep_layout else set()
    return {code_point: _visible(code_point) for code_point in controls
            if code_point not in kept}


# str.translate with a dict walks the text once in C; built once, used for every print.
_MULTILINE = _escape_table(keep_layout=True)
_ONE_LINE = _escape_table(keep_layout=False)


def safe_text(text: object, *, multiline: bool = True) -> str:
    """``text`` (or ``str(text)``) with every control character rendered visibly, safe to
    print to a terminal. Newlines and tabs are kept unless ``multiline`` is false (a table
    cell, a header line), where they print as ``\\n`` and ``\\t`` too."""
    if not isinstance(text, str):
        text = str(text)
    return text.translate(_MULTILINE if multiline else _ONE_LINE)

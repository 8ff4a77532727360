"""The ``colbench`` command's errors reach the terminal as text: an error that quotes an
answer, a record or the agent's own exception never sends its escape sequences."""

from __future__ import annotations

from colbench.cli import show_cmd
from colbench.cli.main import main
from colbench.errors import ConfigError


def test_an_error_quoting_untrusted_text_prints_its_controls_as_text(monkeypatch, capsys,
                                                                      tmp_path):
    def refuse(run_dir):
        raise ConfigError("line 3 is not a record: '\x1b]0;owned\x07\x1b[2J\x9b31m'")

    monkeypatch.setattr(show_cmd, "load_records", refuse)
    code = main(["show", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "\x1b" not in err and "\x9b" not in err and "\x07" not in err
    assert ("colbench show: error: line 3 is not a record: "
            "'\\x1b]0;owned\\x07\\x1b[2J\\x9b31m'") in err


def raises_hostile_error(messages):
    raise ValueError("\x1b]52;c;cm0gLXJmIH4K\x07\x1b[32mPASSED\x1b[0m")


def test_a_run_stopped_by_the_agents_errors_quotes_them_as_text(tmp_path, guess_env_id,
                                                                capsys):
    code = main(["evaluate", guess_env_id, "--model", f"python:{__name__}:raises_hostile_error",
                 "--num-tasks", "6", "--concurrency", "1", "--out", str(tmp_path / "run"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "stopped after 5 episodes in a row failed the same way" in err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b[32mPASSED" in err

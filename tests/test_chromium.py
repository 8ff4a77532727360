"""One Chromium discovery for both browser stacks: overrides, PATH, Debian's locations, and
an error that names the Debian packages to install."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from colbench import chromium
from colbench.chromium import (
    ChromiumNotFound,
    find_chromedriver,
    find_chromium,
    find_chromium_and_driver,
)
from colbench.errors import ConfigError, EnvironmentFailure


def executable(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def bare_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No browser anywhere: an empty PATH, no overrides, no Debian locations."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("COLBENCH_CHROMIUM", raising=False)
    monkeypatch.delenv("COLBENCH_CHROMEDRIVER", raising=False)
    for name in ("_CHROMIUM", "_CHROMEDRIVER"):
        monkeypatch.setattr(chromium, name, replace(getattr(chromium, name), debian_paths=()))
    return empty


def test_a_missing_browser_names_the_debian_packages(bare_machine: Path) -> None:
    with pytest.raises(ChromiumNotFound) as err:
        find_chromium_and_driver("the frontend renderer")
    message = str(err.value)
    assert message.startswith("the frontend renderer needs chromium and chromedriver")
    assert "apt-get install chromium chromium-driver" in message
    assert "COLBENCH_CHROMIUM and COLBENCH_CHROMEDRIVER" in message
    with pytest.raises(ChromiumNotFound, match=r"apt-get install chromium;"):
        find_chromium("the web gym")
    # Callers that catch either kind keep working: it is the user's to fix, never the agent's.
    assert issubclass(ChromiumNotFound, ConfigError)
    assert issubclass(ChromiumNotFound, EnvironmentFailure)


def test_only_what_is_missing_is_named(bare_machine: Path) -> None:
    executable(bare_machine / "chromium")
    with pytest.raises(ChromiumNotFound) as err:
        find_chromium_and_driver()
    assert "needs chromedriver, which was not found" in str(err.value)
    assert "apt-get install chromium-driver;" in str(err.value)


def test_path_names_are_found(bare_machine: Path) -> None:
    browser = executable(bare_machine / "chromium-browser")
    driver = executable(bare_machine / "chromedriver")
    assert find_chromium() == browser
    assert find_chromedriver() == driver
    assert find_chromium_and_driver() == (browser, driver)


def test_debian_locations_serve_a_path_without_usr_bin(
        bare_machine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    browser = executable(tmp_path / "debian-chromium")
    monkeypatch.setattr(chromium, "_CHROMIUM", replace(
        chromium._CHROMIUM, debian_paths=(str(tmp_path / "absent"), browser)))
    assert find_chromium() == browser


def test_the_environment_variables_override_and_must_name_a_file(
        bare_machine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    executable(bare_machine / "chromium")
    mine = executable(tmp_path / "my-chromium")
    monkeypatch.setenv("COLBENCH_CHROMIUM", mine)
    assert find_chromium() == mine
    monkeypatch.setenv("COLBENCH_CHROMEDRIVER", executable(tmp_path / "my-driver"))
    assert find_chromium_and_driver() == (mine, str(tmp_path / "my-driver"))
    monkeypatch.setenv("COLBENCH_CHROMIUM", str(tmp_path / "nothing-here"))
    with pytest.raises(ChromiumNotFound, match="COLBENCH_CHROMIUM=.*nothing-here.* is not a file"):
        find_chromium()


@pytest.mark.skipif(not os.path.isfile("/usr/bin/chromium"), reason="needs Debian's chromium")
def test_debians_chromium_is_found_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLBENCH_CHROMIUM", raising=False)
    assert os.path.realpath(find_chromium()) == os.path.realpath("/usr/bin/chromium")

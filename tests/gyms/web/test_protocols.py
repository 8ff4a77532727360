"""The web family declares its protocol as an object the env reads (issue 27)."""

from __future__ import annotations

import pytest

pytest.importorskip("flask", reason="the web gym needs colbench[web]")
pytest.importorskip("playwright", reason="the web gym needs colbench[web]")

from colbench.gyms.web.env import WebEnv  # noqa: E402
from colbench.gyms.web.protocols import PROTOCOLS, WEB_PROTOCOL  # noqa: E402
from colbench.protocols import DEFAULT_PROTOCOL  # noqa: E402


def test_the_web_env_reads_its_declared_protocol_objects() -> None:
    assert "protocol_specs" in WebEnv.__dict__
    assert WebEnv.protocol_objects() == PROTOCOLS
    assert WebEnv.protocols == (DEFAULT_PROTOCOL,)
    settings = WEB_PROTOCOL.settings()
    assert settings["name"] == DEFAULT_PROTOCOL
    assert settings["task_source"] and settings["scorer"]
    # The turn budget stays the env's own (30 actions), not the protocol's.
    assert WEB_PROTOCOL.max_turns is None and WebEnv.default_max_turns == 30

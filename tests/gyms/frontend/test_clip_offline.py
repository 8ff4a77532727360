"""The CLIP scorer without hub access: one quick check, then its message at once, with no
download retries printed; with the hub reachable the real download path still runs."""

from __future__ import annotations

import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from colbench.errors import ConfigError
from colbench.gyms.frontend import scoring
from colbench.gyms.frontend.scoring import ClipScorer, hub_unreachable_reason


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def no_hub(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")


def test_no_hub_fails_at_once_with_the_help_and_no_retries(no_hub, caplog, capfd):
    started = time.monotonic()
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError) as refused:
        ClipScorer("openai/clip-vit-base-patch32")
    assert time.monotonic() - started < 10
    text = str(refused.value)
    assert "no access to the Hugging Face hub at http://127.0.0.1:" in text
    assert "--scorer perceptual" in text and "HF_HUB_OFFLINE=1" in text
    captured = capfd.readouterr()
    assert "etry" not in captured.err + captured.out + caplog.text  # no "Retrying ..." lines


def test_a_hub_that_answers_lets_the_download_go_ahead(no_hub, monkeypatch):
    class Answer(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        assert hub_unreachable_reason() is None  # any answer, even 404, is access
        import transformers

        tried = []

        def from_pretrained(location, *, local_files_only):
            tried.append(local_files_only)
            raise OSError("not there")

        monkeypatch.setattr(transformers.CLIPModel, "from_pretrained", from_pretrained)
        with pytest.raises(ConfigError, match="could not be loaded .*not there"):
            ClipScorer("openai/clip-vit-base-patch32")
        assert tried == [True, False]  # the cache, then the real download
    finally:
        server.shutdown()


def test_offline_mode_never_asks_the_hub(no_hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(scoring, "hub_unreachable_reason",
                        lambda: pytest.fail("HF_HUB_OFFLINE=1 must not contact the hub"))
    with pytest.raises(ConfigError, match="could not be loaded"):
        ClipScorer("openai/clip-vit-base-patch32")

"""The serving pieces on their own: the access log's lines (one per request, nothing a client
sent can forge a line or drive a terminal) and the ``--workers`` check."""

from __future__ import annotations

import logging

import pytest

from colbench.leaderboard.serving import (
    MAX_WORKERS,
    AccessLog,
    access_line,
    parse_workers,
)


def _environ(**extra: str) -> dict[str, str]:
    return {"REQUEST_METHOD": "GET", "PATH_INFO": "/boards/colbench/Backend-v0",
            "QUERY_STRING": "status=all", "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "10.0.0.7", "HTTP_USER_AGENT": "colbench-test", **extra}


def test_an_access_line_is_the_common_log_format_with_the_time_taken() -> None:
    line = access_line(_environ(), "200 OK", 1234, 0.0123, now=0.0)
    assert line == ('10.0.0.7 - - [01/Jan/1970:00:00:00 +0000] '
                    '"GET /boards/colbench/Backend-v0?status=all HTTP/1.1" 200 1234 "-" '
                    '"colbench-test" 0.012')
    assert access_line(_environ(), "500 INTERNAL SERVER ERROR", None, 0.5).split('" ')[1] \
        .startswith("500 -")


def test_nothing_a_client_sends_reaches_the_log_as_control_text() -> None:
    hostile = _environ(PATH_INFO="/x\x1b[2J\r\n1.2.3.4 - - [forged]",
                       QUERY_STRING='a="b"\x07', HTTP_USER_AGENT="\x1b]52;c;cm0=\x07 \u202e",
                       HTTP_AUTHORIZATION="Bearer cbt_secret")
    line = access_line(hostile, "404 NOT FOUND", 10, 0.001)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line and "\x07" not in line
    assert "\u202e" not in line and "\\u202e" in line
    assert '\\"b\\"' in line  # a quote cannot close the request field
    assert "cbt_secret" not in line


def test_the_access_log_writes_one_line_when_the_response_is_closed(caplog) -> None:
    def app(environ, start_response):
        start_response("201 CREATED", [("Content-Type", "text/plain")])
        return [b"abc", b"de"]

    logger = logging.getLogger("test.access")
    wrapped = AccessLog(app, logger)
    with caplog.at_level(logging.INFO, logger="test.access"):
        body = wrapped(_environ(), lambda status, headers, exc_info=None: None)
        assert b"".join(body) == b"abcde"
        assert caplog.records == []  # not before the server is done with it
        body.close()
        body.close()  # a second close logs nothing more
    assert len(caplog.records) == 1
    assert '" 201 5 "-"' in caplog.records[0].getMessage()


def test_a_failing_app_is_still_logged(caplog) -> None:
    def app(environ, start_response):
        raise RuntimeError("boom")

    logger = logging.getLogger("test.access.fail")
    with caplog.at_level(logging.INFO, logger="test.access.fail"), \
            pytest.raises(RuntimeError):
        AccessLog(app, logger)(_environ(), lambda *a: None)
    assert ['" 500 -' in r.getMessage() for r in caplog.records] == [True]


@pytest.mark.parametrize("text", ["0", "-2", str(MAX_WORKERS + 1), "2.5", "", "many"])
def test_bad_worker_counts_are_refused_with_the_reason(text: str) -> None:
    with pytest.raises(ValueError, match="request threads"):
        parse_workers(text)


def test_worker_counts_in_range_are_taken() -> None:
    assert parse_workers("1") == 1 and parse_workers(str(MAX_WORKERS)) == MAX_WORKERS

"""The ``openai:`` adapter against a real chat-completions server on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from colbench.errors import ConfigError, ModelFailure
from colbench.models import SamplingParams, load_model
from colbench.models.openai_compat import OpenAICompatModel, normalize_base_url, parse_target

FAST = "backoff=0.001&max_backoff=0.01"


@dataclass
class Reply:
    """One scripted answer: status, body (a dict is sent as JSON), headers, delay first."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False  # close the connection without answering


def completion_body(request: dict[str, Any]) -> dict[str, Any]:
    """A well-formed reply echoing the last message, with usage and (when asked) logprobs."""
    last = request["messages"][-1]["content"]
    words = ["echo", *last.split()]
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": " ".join(words)}}
    if request.get("logprobs"):
        as_ids = request.get("return_tokens_as_token_ids")
        choice["logprobs"] = {"content": [
            {"token": f"token_id:{100 + i}" if as_ids else w, "logprob": -0.5 * (i + 1)}
            for i, w in enumerate(words)]}
    return {"id": "x", "object": "chat.completion", "model": request["model"],
            "choices": [choice],
            "usage": {"prompt_tokens": 7, "completion_tokens": len(words), "total_tokens": 7}}


class ChatServer:
    """A threaded HTTP server speaking chat completions, answering from a script.

    ``script`` is consumed one reply per request; when it is empty, ``default`` answers.
    It counts the requests in flight at once (``max_active``).
    """

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.default: Callable[[dict[str, Any]], Reply] = lambda req: Reply(
            body=completion_body(req))
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length))
                with server.lock:
                    server.requests.append(request)
                    server.headers.append(dict(self.headers))
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                    reply = server.script.pop(0) if server.script else server.default(request)
                    request["_path"] = self.path
                try:
                    time.sleep(reply.delay)
                    if reply.drop:
                        self.close_connection = True
                        return
                    body = reply.body if reply.body is not None else completion_body(request)
                    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    with server.lock:
                        server.active -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    yield srv
    srv.close()


@pytest.fixture
def make() -> Iterator[Callable[[str], OpenAICompatModel]]:
    """``load_model`` that closes what it built when the test ends."""
    built: list[OpenAICompatModel] = []

    def load(spec: str) -> OpenAICompatModel:
        model = load_model(spec)
        built.append(model)
        return model

    yield load
    for model in built:
        model.close()


def conv(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]


def test_success_fills_text_usage_logprobs_and_sends_params(server, monkeypatch, make):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = make(f"openai:tiny-model@{server.url}")
    params = SamplingParams(temperature=0.3, max_tokens=17, top_p=0.9, seed=5, stop=("##",),
                            logprobs=True)
    [out] = model.generate([conv("hello there")], params)
    assert out.text == "echo hello there"
    assert out.finish_reason == "stop"
    assert (out.prompt_tokens, out.completion_tokens) == (7, 3)
    assert out.logprobs == [-0.5, -1.0, -1.5]
    assert out.token_ids is None  # plain tokens are not ids
    sent = server.requests[0]
    assert sent["_path"] == "/v1/chat/completions"
    assert sent["model"] == "tiny-model"
    assert sent["messages"] == conv("hello there")
    assert (sent["temperature"], sent["max_tokens"], sent["top_p"], sent["seed"]) == (
        0.3, 17, 0.9, 5)
    assert sent["stop"] == ["##"] and sent["logprobs"] is True
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_no_logprobs_requested_sends_none_and_no_key_sends_no_auth(server, monkeypatch, make):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = make(f"openai:m@{server.url}")
    [out] = model.generate([conv("a b")])
    assert out.logprobs is None and out.text == "echo a b"
    assert "logprobs" not in server.requests[0] and "seed" not in server.requests[0]
    assert "Authorization" not in server.headers[0]


def test_token_ids_from_vllm_tokens_as_ids(server, make):
    model = make(f"openai:m@{server.url}?tokens_as_ids=true")
    [out] = model.generate([conv("x y")], SamplingParams(logprobs=True))
    assert server.requests[0]["return_tokens_as_token_ids"] is True
    assert out.token_ids == [100, 101, 102]
    assert len(out.logprobs) == 3


def test_500_then_success_is_retried(server, make):
    server.script = [Reply(500, {"error": {"message": "overloaded"}})]
    model = make(f"openai:m@{server.url}?{FAST}")
    [out] = model.generate([conv("again")])
    assert out.text == "echo again"
    assert len(server.requests) == 2
    assert out.extra["retries"] == 1


def test_429_honours_retry_after(server, make):
    server.script = [Reply(429, {"error": {"message": "rate limited"}},
                           headers={"Retry-After": "0.3"})]
    model = make(f"openai:m@{server.url}?{FAST}")
    start = time.perf_counter()
    [out] = model.generate([conv("later")])
    elapsed = time.perf_counter() - start
    assert out.text == "echo later"
    assert len(server.requests) == 2
    assert elapsed >= 0.3  # waited as told, not the 1 ms backoff


def test_retry_after_is_capped(server, make):
    server.script = [Reply(429, b"slow down", headers={"Retry-After": "3600"})]
    model = make(f"openai:m@{server.url}?{FAST}&max_retry_after=0.05")
    start = time.perf_counter()
    [out] = model.generate([conv("soon")])
    assert out.text == "echo soon"
    # Uncapped, the wait is an hour; the bound is loose so that a loaded machine passes.
    assert time.perf_counter() - start < 30


def test_timeout_is_retried_then_succeeds(server, make):
    server.script = [Reply(delay=0.6)]
    model = make(f"openai:m@{server.url}?{FAST}&timeout=0.15")
    [out] = model.generate([conv("slow")])
    assert out.text == "echo slow"
    assert len(server.requests) == 2


def test_timeout_every_time_raises_model_failure(server, make):
    # The server answers only after 30 s: a client that waited for any answer instead of
    # giving up at its 0.1 s timeout would get one (and no failure) or take 30 s per attempt.
    server.default = lambda req: Reply(delay=30)
    model = make(f"openai:m@{server.url}?{FAST}&timeout=0.1&max_retries=2")
    start = time.perf_counter()
    with pytest.raises(ModelFailure) as info:
        model.generate([conv("never")])
    message = str(info.value)
    assert server.url + "/chat/completions" in message
    assert "timed out" in message and "3 attempt" in message
    assert len(server.requests) == 3
    # All three attempts gave up before the first answer was due (loose: a loaded machine).
    assert time.perf_counter() - start < 30


def test_malformed_body_is_retried_then_succeeds(server, make):
    server.script = [Reply(body=b"<html>gateway hiccup</html>"),
                     Reply(body={"id": "x", "object": "chat.completion"})]
    model = make(f"openai:m@{server.url}?{FAST}")
    [out] = model.generate([conv("fine")])
    assert out.text == "echo fine"
    assert len(server.requests) == 3


def test_malformed_body_every_time_raises_model_failure(server, make):
    server.default = lambda req: Reply(body={"object": "chat.completion", "choices": []})
    model = make(f"openai:m@{server.url}?{FAST}&max_retries=3")
    with pytest.raises(ModelFailure) as info:
        model.generate([conv("broken")])
    assert "malformed" in str(info.value) and "choices" in str(info.value)
    assert "HTTP 200" in str(info.value)
    assert len(server.requests) == 4


def test_401_fails_at_once_with_the_server_message(server, make):
    server.default = lambda req: Reply(401, {"error": {"message": "Incorrect API key provided"}})
    model = make(f"openai:m@{server.url}?{FAST}")
    with pytest.raises(ModelFailure) as info:
        model.generate([conv("hi")])
    assert "401" in str(info.value) and "Incorrect API key provided" in str(info.value)
    assert len(server.requests) == 1


def test_400_with_plain_text_body_fails_at_once(server, make):
    server.default = lambda req: Reply(400, b"max_tokens is too large for this model")
    model = make(f"openai:m@{server.url}?{FAST}")
    with pytest.raises(ModelFailure, match="max_tokens is too large"):
        model.generate([conv("hi")])
    assert len(server.requests) == 1


def test_5xx_every_time_names_url_status_and_error(server, make):
    server.default = lambda req: Reply(503, {"error": {"message": "no capacity"}})
    model = make(f"openai:m@{server.url}?{FAST}&max_retries=2")
    with pytest.raises(ModelFailure) as info:
        model.generate([conv("hi")])
    message = str(info.value)
    assert server.url in message and "HTTP 503" in message and "no capacity" in message
    assert len(server.requests) == 3


def test_connection_refused_is_retried_then_fails(make):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = make(f"openai:m@http://127.0.0.1:{port}/v1?{FAST}&max_retries=1")
    with pytest.raises(ModelFailure, match="connection error"):
        model.generate([conv("anyone?")])


def test_concurrency_bound_is_respected(server, make):
    server.default = lambda req: Reply(delay=0.1, body=completion_body(req))
    model = make(f"openai:m@{server.url}?concurrency=3")
    outs = model.generate([conv(f"n{i}") for i in range(12)])
    assert [o.text for o in outs] == [f"echo n{i}" for i in range(12)]  # order kept
    assert server.max_active == 3


def test_concurrency_bound_holds_across_concurrent_agenerate_calls(server, make):
    server.default = lambda req: Reply(delay=0.05, body=completion_body(req))
    model = make(f"openai:m@{server.url}?concurrency=2")

    async def main() -> list[str]:
        batches = await asyncio.gather(*(model.agenerate([conv(f"e{i}")]) for i in range(8)))
        await model.aclose()
        return [b[0].text for b in batches]

    assert asyncio.run(main()) == [f"echo e{i}" for i in range(8)]
    assert server.max_active == 2


def test_spec_sampling_options_override_the_callers(server, make):
    model = make(f"openai:m@{server.url}?temperature=0.7&max_tokens=9&stop=END")
    model.generate([conv("x")], SamplingParams(temperature=0.0, max_tokens=100))
    sent = server.requests[0]
    assert (sent["temperature"], sent["max_tokens"], sent["stop"]) == (0.7, 9, ["END"])


def test_extra_body_is_merged(server, make):
    model = make(f'openai:m@{server.url}?extra_body={{"top_k":5}}')
    model.generate([conv("x")])
    assert server.requests[0]["top_k"] == 5


# -- spec parsing ----------------------------------------------------------------------------

def test_missing_base_url_says_how_to_give_one(monkeypatch, make):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL") as info:
        make("openai:gpt-4o-mini")
    assert "@http://" in str(info.value)


def test_base_url_from_environment(monkeypatch, server, make):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/")
    model = make("openai:from-env")
    assert isinstance(model, OpenAICompatModel)
    assert model.url == server.url + "/chat/completions"
    [out] = model.generate([conv("env")])
    assert out.text == "echo env"


def test_parse_target_and_url_normalisation():
    assert parse_target("org/m@http://h:8000/v1", env={}) == ("org/m", "http://h:8000/v1")
    assert parse_target("m@h:8000", env={}) == ("m", "http://h:8000/v1")
    assert parse_target("m", env={"OPENAI_BASE_URL": "https://api.x.com/v1"}) == (
        "m", "https://api.x.com/v1")
    assert normalize_base_url("http://h/v1/chat/completions") == "http://h/v1"
    assert normalize_base_url("http://h:1/api/v2/") == "http://h:1/api/v2"
    with pytest.raises(ConfigError, match="names no model"):
        parse_target("@http://h/v1", env={})
    with pytest.raises(ConfigError, match="not an http"):
        normalize_base_url("ftp://h/v1")


@pytest.mark.parametrize("options, needle", [
    ("concurrency=0", "concurrency"),
    ("timeout=abc", "timeout"),
    ("temperature=hot", "temperature"),
    ("top_p=1.5", "top_p"),
    ("stop=[1,2]", "stop"),
    ("tokens_as_ids=maybe", "tokens_as_ids"),
    ("extra_body=[1]", "extra_body"),
    ("colour=red", "unknown option"),
    ("api_key_env=COLBENCH_SURELY_UNSET_VAR", "COLBENCH_SURELY_UNSET_VAR"),
])
def test_bad_options_are_config_errors(options, needle, make):
    with pytest.raises(ConfigError, match=needle):
        make(f"openai:m@http://127.0.0.1:9/v1?{options}")


def test_api_key_env_option_reads_the_named_variable(server, monkeypatch, make):
    monkeypatch.setenv("MY_SERVER_KEY", "secret-1")
    model = make(f"openai:m@{server.url}?api_key_env=MY_SERVER_KEY")
    model.generate([conv("k")])
    assert server.headers[0]["Authorization"] == "Bearer secret-1"
    assert "secret-1" not in model.name


def test_error_object_with_status_200_is_retried_and_reported(server, make):
    server.default = lambda req: Reply(body={"error": {"message": "engine crashed"}})
    model = make(f"openai:m@{server.url}?{FAST}&max_retries=1")
    with pytest.raises(ModelFailure, match="engine crashed"):
        model.generate([conv("x")])
    assert len(server.requests) == 2


def test_server_dropping_the_connection_is_retried(server, make):
    server.script = [Reply(drop=True)]
    model = make(f"openai:m@{server.url}?{FAST}")
    [out] = model.generate([conv("whole")])
    assert out.text == "echo whole"
    assert len(server.requests) == 2


def test_blocking_generate_from_many_threads_shares_the_bound(server, make):
    server.default = lambda req: Reply(delay=0.05, body=completion_body(req))
    model = make(f"openai:m@{server.url}?concurrency=2")
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        results[i] = model.generate([conv(f"t{i}")])[0].text

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    model.close()
    assert results == {i: f"echo t{i}" for i in range(8)}
    assert server.max_active == 2


def test_blocking_generate_inside_a_coroutine_is_refused(server, make):
    model = make(f"openai:m@{server.url}")

    async def misuse() -> None:
        model.generate([conv("x")])

    with pytest.raises(RuntimeError, match="agenerate"):
        asyncio.run(misuse())
    model.close()


# -- the retry budget: one call's failure takes bounded time ---------------------------------
def test_retry_budget_bounds_a_call_whatever_timeout_and_retries_say(server, make):
    server.default = lambda req: Reply(delay=0.6, body=completion_body(req))
    model = make(f"openai:m@{server.url}?{FAST}&timeout=30&max_retries=50&retry_budget=0.4")
    start = time.perf_counter()
    with pytest.raises(ModelFailure) as info:
        model.generate([conv("slow")])
    # Not 30 s (the timeout), nor 51 attempts; loose so that a loaded machine passes.
    assert time.perf_counter() - start < 15
    assert "timed out" in str(info.value) and "1 attempt" in str(info.value)


def test_a_wait_that_would_end_after_the_budget_is_not_waited(server, make):
    server.default = lambda req: Reply(503, {"error": {"message": "no capacity"}})
    model = make(f"openai:m@{server.url}?backoff=20&max_backoff=20&max_retries=5"
                 "&retry_budget=2")
    start = time.perf_counter()
    with pytest.raises(ModelFailure) as info:
        model.generate([conv("hi")])
    # The 20 s backoff was not waited; loose so that a loaded machine passes.
    assert time.perf_counter() - start < 15
    assert len(server.requests) == 1
    assert "no time was left in the retry budget" in str(info.value)
    assert "HTTP 503" in str(info.value) and "1 attempt" in str(info.value)


def test_retry_budget_default_and_bad_values(make):
    model = make("openai:m@http://127.0.0.1:9/v1")
    assert model.retry_budget == 300
    with pytest.raises(ConfigError, match="retry_budget"):
        make("openai:m@http://127.0.0.1:9/v1?retry_budget=0")

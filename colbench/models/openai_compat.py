"""``openai:MODEL@URL``: any server that speaks OpenAI's chat-completions protocol.

vLLM, SGLang, TGI, Ollama, llama.cpp and the hosted APIs all do. The base URL is the part
before ``/chat/completions`` (``http://host:8000/v1``); without ``@URL`` it comes from
``OPENAI_BASE_URL``. A URL with no path gets ``/v1``; one without a scheme gets ``http://``.
The API key, when the server wants one, is read from ``OPENAI_API_KEY`` (or the variable that
``api_key_env`` names); a spec never holds a secret, since specs are written into results.

Options (``openai:m@http://h:8000/v1?timeout=30&concurrency=64``):

- ``concurrency`` (16): requests in flight at once, per event loop. Async callers
  (``agenerate``) share their own loop's bound; blocking callers (``generate``, from any
  thread) share one background loop and its bound.
- ``timeout`` (120): seconds one request may take before it is abandoned and retried.
- ``max_retries`` (5): retries after the first attempt, on 408/409/429/5xx answers,
  connection errors, timeouts and malformed bodies. Other 4xx answers (a bad request, a wrong
  key, an unknown model) fail at once: retrying cannot fix them.
- ``backoff`` (0.5) and ``max_backoff`` (30): the retry delay doubles from ``backoff`` up to
  ``max_backoff`` seconds, with jitter (a random point in the upper half of the interval), so
  that many clients do not retry in lockstep. A ``Retry-After`` header replaces the computed
  delay, capped at ``max_retry_after`` (60) seconds.
- ``retry_budget`` (300): seconds one request may take in all, attempts and waits together.
  No attempt starts after it, a wait that would end after it is not waited, and the last
  attempt's timeout is cut to what is left, so one call (hence one episode's failure) takes
  bounded time whatever ``timeout`` and ``max_retries`` say. Against a server that refuses
  connections the defaults give up after about 8 to 16 seconds.
- ``api_key_env``: the environment variable holding the key (default ``OPENAI_API_KEY``).
- ``tokens_as_ids`` (false): ask vLLM for ``return_tokens_as_token_ids`` so that log-probs come
  with token ids (only vLLM knows this field; strict servers reject unknown fields).
- ``extra_body``: a JSON object merged into every request (``chat_template_kwargs``...).
- ``tools`` (false): tool calling. Each episode's requests carry the env's actions as
  OpenAI tools (``colbench.tools``: the env's ``action_tools``); a reply's first tool call
  becomes the message it stands for, which the env reads by its own grammar, and a reply with
  no tool call is a message as without the option. The raw call stays in the completion's
  ``extra["tool_calls"]``, and the chat sent back holds the call and a ``tool`` message with
  the env's answer, as the tools API expects. An env with no tools gets plain requests.
- the sampling keys of :mod:`colbench.models.options`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from colbench.errors import ConfigError, ModelFailure
from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.models.options import (
    apply_sampling,
    as_bool,
    as_float,
    as_int,
    pop_sampling,
    reject_unknown,
)
from colbench.models.spec import split_options
from colbench.tools import ToolEpisode

KIND = "openai"
_OPTION_KEYS = ("concurrency", "timeout", "max_retries", "backoff", "max_backoff",
                "max_retry_after", "retry_budget", "api_key_env", "tokens_as_ids",
                "extra_body", "tools")
_RETRY_STATUSES = frozenset({408, 409, 429})
_TOKEN_ID = re.compile(r"^token_id:(\d+)$")


class _Retryable(Exception):
    """An attempt failed in a way that a later attempt may not (server busy, broken body)."""

    def __init__(self, status: int | None, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


@dataclass
class _LoopState:
    """The HTTP client and the concurrency bound of one event loop (neither can be shared
    across loops: an httpx connection pool and an asyncio semaphore belong to one loop)."""

    client: Any
    semaphore: asyncio.Semaphore


def normalize_base_url(url: str) -> str:
    """``host:8000`` -> ``http://host:8000/v1``; drops a trailing ``/chat/completions``."""
    url = url.strip().rstrip("/")
    if not url:
        raise ConfigError("openai: the base URL is empty")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"openai: {url!r} is not an http(s) URL")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    if not urlsplit(url).path:
        url += "/v1"
    return url


def parse_target(target: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """``MODEL@URL`` or ``MODEL`` (URL from ``OPENAI_BASE_URL``) -> ``(model, base_url)``."""
    env = os.environ if env is None else env
    at = -1
    for scheme in ("@http://", "@https://"):
        found = target.find(scheme)
        if found != -1 and (at == -1 or found < at):
            at = found
    if at == -1 and "@" in target:
        at = target.rfind("@")
    if at != -1:
        model, url = target[:at], target[at + 1:]
    else:
        model, url = target, env.get("OPENAI_BASE_URL", "")
        if not url.strip():
            raise ConfigError(
                f"openai:{target} has no server URL: write the spec as "
                f"'openai:{target or 'MODEL'}@http://HOST:PORT/v1' or set OPENAI_BASE_URL")
    if not model:
        raise ConfigError(f"openai spec {('openai:' + target)!r} names no model; "
                          "use 'openai:MODEL@URL'")
    return model, normalize_base_url(url)


def _retry_after(value: str | None, cap: float) -> float | None:
    """Seconds from a ``Retry-After`` header (a number or an HTTP date), capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, min(seconds, cap))


def _error_text(body: bytes) -> str:
    """The server's own words about an error: ``error.message`` when it sent JSON."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message") or err
        if err:
            return str(err)[:500]
    return text[:500]


def parse_completion(data: Any, want_logprobs: bool) -> Completion:
    """One chat-completions response body -> :class:`Completion`.

    Raises :class:`_Retryable` when the body is not a chat completion at all (no choices, no
    message), which some proxies return under load.
    """
    if not isinstance(data, dict):
        raise _Retryable(200, f"malformed body: expected a JSON object, got {type(data).__name__}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        said = f" (the server said: {_error_text(json.dumps(data).encode())})" if (
            data.get("error")) else ""
        raise _Retryable(200, f"malformed body: no 'choices' in the response{said}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise _Retryable(200, "malformed body: the choice has no 'message'")
    content = message.get("content")
    if content is None:  # a reply cut before any visible text (reasoning models), a tool call
        content = ""
    if not isinstance(content, str):
        raise _Retryable(200, f"malformed body: message content is {type(content).__name__}")
    completion = Completion(text=content, finish_reason=choice.get("finish_reason"))
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls and all(isinstance(c, dict) for c in calls):
        completion.extra["tool_calls"] = calls
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            completion.extra["reasoning"] = message[key]
    usage = data.get("usage")
    if isinstance(usage, dict):
        if isinstance(usage.get("prompt_tokens"), int):
            completion.prompt_tokens = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            completion.completion_tokens = usage["completion_tokens"]
    logprobs = choice.get("logprobs")
    if want_logprobs and isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
        entries = logprobs["content"]
        try:
            completion.logprobs = [float(e["logprob"]) for e in entries]
        except (KeyError, TypeError, ValueError) as exc:
            raise _Retryable(200, f"malformed body: bad logprobs entry ({exc!r})") from None
        ids = [_TOKEN_ID.match(str(e.get("token", ""))) for e in entries]
        if entries and all(ids):
            completion.token_ids = [int(m.group(1)) for m in ids if m]
        if completion.completion_tokens is None:
            completion.completion_tokens = len(entries)
    return completion


class OpenAICompatModel(BaseChatModel):
    """An async client for ``{base_url}/chat/completions`` with retries and a concurrency bound.

    One conversation is one request. The bound applies per event loop: the runner drives all
    its episodes from one loop, so ``concurrency`` is the number of requests in flight, and
    blocking ``generate`` calls from any thread share one more loop, with its own bound.
    """

    def __init__(self, model: str, base_url: str, *, api_key: str | None = None,
                 concurrency: int = 16, timeout: float = 120.0, max_retries: int = 5,
                 backoff: float = 0.5, max_backoff: float = 30.0, max_retry_after: float = 60.0,
                 retry_budget: float = 300.0, sampling: dict[str, Any] | None = None, tokens_as_ids: bool = False,
                 extra_body: dict[str, Any] | None = None, name: str | None = None,
                 tools: bool = False) -> None:
        if concurrency < 1:
            raise ConfigError(f"openai: concurrency must be at least 1, got {concurrency}")
        if timeout <= 0:
            raise ConfigError(f"openai: timeout must be positive, got {timeout}")
        if retry_budget <= 0:
            raise ConfigError(f"openai: retry_budget must be positive, got {retry_budget}")
        self.model = model
        self.base_url = normalize_base_url(base_url)
        self.url = self.base_url + "/chat/completions"
        self.api_key = api_key
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.retry_budget = retry_budget
        self.sampling = dict(sampling or {})
        self.tokens_as_ids = tokens_as_ids
        self.extra_body = dict(extra_body or {})
        self.tools = tools
        self.name = name or f"{KIND}:{model}@{self.base_url}"
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary())
        self._states_lock = threading.Lock()
        self._background: tuple[asyncio.AbstractEventLoop, threading.Thread] | None = None
        self._background_lock = threading.Lock()

    def check_ready(self) -> None:
        """One request before the run: a server that is down or does not serve the model
        ends the run at once, naming the URL and what answered
        (:func:`colbench.models._server_check.check_server`)."""
        from colbench.models._server_check import check_server

        check_server(self.base_url, self.model, self.api_key, _error_text)

    # -- per-loop client ------------------------------------------------------------------
    def _state(self) -> _LoopState:
        import httpx

        loop = asyncio.get_running_loop()
        with self._states_lock:
            state = self._states.get(loop)
            if state is None:
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                client = httpx.AsyncClient(
                    timeout=httpx.Timeout(self.timeout), headers=headers,
                    limits=httpx.Limits(max_connections=self.concurrency,
                                        max_keepalive_connections=self.concurrency))
                state = _LoopState(client, asyncio.Semaphore(self.concurrency))
                self._states[loop] = state
        return state

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        loop = asyncio.get_running_loop()
        with self._states_lock:
            state = self._states.pop(loop, None)
        if state is not None:
            await state.client.aclose()

    def close(self) -> None:
        """Close every loop's client that can still be closed (loops that ended need none),
        then stop the background loop that serves :meth:`generate`."""
        with self._states_lock:
            states = list(self._states.items())
            self._states.clear()
        with self._background_lock:
            background, self._background = self._background, None
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, state in states:
            if loop.is_closed():
                continue
            if loop is current:
                loop.create_task(state.client.aclose())
            elif loop.is_running():
                done = asyncio.run_coroutine_threadsafe(state.client.aclose(), loop)
                if background is not None and loop is background[0]:
                    done.result(timeout=10)
            else:
                loop.run_until_complete(state.client.aclose())
        if background is not None:
            loop, thread = background
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            if not thread.is_alive():
                loop.close()

    def _background_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop, on its own daemon thread, that every blocking caller shares."""
        with self._background_lock:
            if self._background is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, daemon=True,
                                          name=f"colbench-openai-{self.model}")
                thread.start()
                self._background = (loop, thread)
            return self._background[0]

    # -- requests ---------------------------------------------------------------------------
    def request_body(self, conversation: Conversation, params: SamplingParams,
                     tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The JSON body for one conversation (public so that users can see what is sent),
        with ``tools`` (OpenAI tool schemas) when given."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in conversation],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            "n": 1,
        }
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        if params.logprobs:
            body["logprobs"] = True
            if self.tokens_as_ids:
                body["return_tokens_as_token_ids"] = True
        if tools:
            body["tools"] = tools
        body.update(self.extra_body)
        return body

    async def _attempt(self, client: Any, body: dict[str, Any], want_logprobs: bool) -> Completion:
        response = await client.post(self.url, json=body)
        status = response.status_code
        if status >= 400:
            message = _error_text(response.content)
            if status in _RETRY_STATUSES or status >= 500:
                raise _Retryable(status, message,
                                 _retry_after(response.headers.get("retry-after"),
                                              self.max_retry_after))
            raise ModelFailure(f"{self.url} answered HTTP {status} for model {self.model!r}: "
                               f"{message}")
        try:
            data = response.json()
        except ValueError:
            snippet = response.text[:200]
            raise _Retryable(status, f"malformed body: not JSON: {snippet!r}") from None
        try:
            return parse_completion(data, want_logprobs)
        except _Retryable as exc:
            exc.status = status
            raise

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        span = min(self.max_backoff, self.backoff * (2 ** attempt))
        return span / 2 + random.uniform(0, span / 2)

    async def _complete(self, state: _LoopState, conversation: Conversation,
                        params: SamplingParams,
                        tools: list[dict[str, Any]] | None = None) -> Completion:
        import httpx

        body = self.request_body(conversation, params, tools)
        last_status: int | None = None
        last_error = "no attempt was made"
        deadline = time.monotonic() + self.retry_budget
        attempts = 0
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            attempts = attempt + 1
            try:
                async with state.semaphore:
                    started = time.perf_counter()
                    # Time spent waiting for the semaphore counts: the budget is wall time.
                    left = deadline - time.monotonic()
                    if left <= 0:
                        attempts -= 1
                        last_error += " (then the retry budget ran out)"
                        break
                    completion = await asyncio.wait_for(
                        self._attempt(state.client, body, params.logprobs),
                        min(self.timeout, left))
                completion.extra.setdefault("latency_s", time.perf_counter() - started)
                if attempt:
                    completion.extra["retries"] = attempt
                return completion
            except _Retryable as exc:
                last_status, last_error = exc.status, exc.message
                retry_after = exc.retry_after
            except (httpx.TimeoutException, asyncio.TimeoutError):
                waited = time.perf_counter() - started
                last_status, last_error = None, f"timed out after {waited:.3g} s"
            except httpx.RequestError as exc:  # refused, reset, broken stream, bad encoding
                last_status = None
                last_error = f"connection error: {type(exc).__name__}: {exc}".rstrip(": ")
            if attempt < self.max_retries:
                delay = self._delay(attempt, retry_after)
                if time.monotonic() + delay >= deadline:
                    last_error += " (no time was left in the retry budget to try again)"
                    break
                await asyncio.sleep(delay)
        status = f"HTTP {last_status}" if last_status is not None else "no HTTP status"
        raise ModelFailure(f"{self.url} (model {self.model!r}) failed after "
                           f"{attempts} attempt(s); last: {status}, {last_error}")

    async def agenerate(self, conversations: Sequence[Conversation],
                        params: SamplingParams | None = None) -> list[Completion]:
        params = apply_sampling(params, self.sampling)
        state = self._state()
        tasks = [asyncio.ensure_future(self._complete(state, c, params)) for c in conversations]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def bind_episode(self, env: Any, context: EpisodeContext) -> BaseChatModel:
        """Without ``tools``, this model; with it, a :class:`ToolCallingEpisode` that plays
        ``env`` through its action tools."""
        if not self.tools:
            return self
        from colbench.tools import env_action_tools

        return ToolCallingEpisode(self, env_action_tools(env))

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        """Blocking form, safe from any number of threads (the simulators call it from
        worker threads): the requests run on one shared background loop, so they share its
        connections and its ``concurrency`` bound."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(f"{self.name}: generate() blocks; inside a coroutine use "
                               "'await model.agenerate(...)'")
        future = asyncio.run_coroutine_threadsafe(self.agenerate(conversations, params),
                                                  self._background_loop())
        return future.result()


class ToolCallingEpisode(ToolEpisode, BaseChatModel):
    """One episode of an :class:`OpenAICompatModel` in tools mode (``?tools=1``): each
    request carries the env's tools, and a reply's tool call becomes the message it stands
    for (:class:`colbench.tools.ToolChat`). A reply without a tool call is the message, as
    without tools.

    Parameters
    ----------
    model:
        The adapter whose connection, retries and sampling this episode uses.
    tools:
        The env's action tools (none: plain requests).
    """

    async def respond(self, conversation: Conversation, params: SamplingParams | None,
                      context: EpisodeContext) -> Completion:
        model = self.model
        completion = await model._complete(model._state(),
                                           self.chat.messages(conversation, context.turn),
                                           apply_sampling(params, model.sampling),
                                           self.chat.schemas)
        return self.chat.take(completion, context.turn)


def build(rest: str, **_: Any) -> OpenAICompatModel:
    """``openai:MODEL@URL[?options]`` -> :class:`OpenAICompatModel` (see the module docs)."""
    target, options = split_options(rest)
    sampling = pop_sampling(KIND, options)
    reject_unknown(KIND, options, _OPTION_KEYS)
    model, base_url = parse_target(target)
    key_env = options.get("api_key_env", "OPENAI_API_KEY")
    api_key = os.environ.get(key_env) or None
    if "api_key_env" in options and api_key is None:
        raise ConfigError(f"openai: option api_key_env={key_env} names an environment variable "
                          "that is not set")
    extra_body: dict[str, Any] = {}
    if "extra_body" in options:
        try:
            extra_body = json.loads(options["extra_body"])
        except json.JSONDecodeError as exc:
            raise ConfigError(f"openai: option extra_body is not JSON: {exc}") from exc
        if not isinstance(extra_body, dict):
            raise ConfigError("openai: option extra_body must be a JSON object")
    return OpenAICompatModel(
        model, base_url, api_key=api_key,
        concurrency=as_int(KIND, "concurrency", options.get("concurrency", "16"), 1),
        timeout=as_float(KIND, "timeout", options.get("timeout", "120"), 0.001),
        max_retries=as_int(KIND, "max_retries", options.get("max_retries", "5"), 0),
        backoff=as_float(KIND, "backoff", options.get("backoff", "0.5"), 0.0),
        max_backoff=as_float(KIND, "max_backoff", options.get("max_backoff", "30"), 0.0),
        max_retry_after=as_float(KIND, "max_retry_after",
                                 options.get("max_retry_after", "60"), 0.0),
        retry_budget=as_float(KIND, "retry_budget", options.get("retry_budget", "300"), 0.001),
        sampling=sampling,
        tokens_as_ids=as_bool(KIND, "tokens_as_ids", options.get("tokens_as_ids", "false")),
        extra_body=extra_body,
        name=f"{KIND}:{rest}",
        tools=as_bool(KIND, "tools", options.get("tools", "false")),
    )

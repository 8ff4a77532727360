"""The one check an ``openai:`` model makes before a run's first episode: is a server there,
and does it serve the model?

A dead server otherwise costs every episode its full retry budget (8 to 16 s each with the
defaults) before the run stops. Here one request decides in about a second: ``GET /models``;
where the server has no such route (404), one chat completion of one token. Only definite answers
fail the check (nothing listens, the name does not resolve, the key is refused, the model is
unknown); a busy or failing server (429, 5xx, a slow answer) is left to the calls' retries.
"""

from __future__ import annotations

from typing import Any

from colbench.errors import ConfigError

#: Seconds the check waits to connect, and for an answer.
CONNECT_TIMEOUT_S = 1.5
ANSWER_TIMEOUT_S = 10.0
#: Statuses that say the request itself is refused, whatever it asks: no retry fixes them.
_REFUSED = {401: "refused the API key", 403: "refused access"}


def _listed_models(data: Any) -> list[str] | None:
    """The ids of an OpenAI ``/models`` listing, or None when ``data`` is not one."""
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return None
    return [str(row["id"]) for row in rows if isinstance(row, dict) and "id" in row]


def check_server(base_url: str, model: str, api_key: str | None,
                 error_text: Any) -> None:
    """Raise :class:`ConfigError`, one line naming ``base_url`` and what answered, when the
    server cannot serve ``model``; return when it can, or when only a retry could tell.

    Parameters
    ----------
    base_url:
        The server's base URL (``http://host:8000/v1``).
    model:
        The model name sent in requests.
    api_key:
        The bearer token, if any (never shown).
    error_text:
        A function of a response body that returns the server's own words about an error.
    """
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = httpx.Timeout(ANSWER_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    where = f"the model server at {base_url}"
    try:
        with httpx.Client(timeout=timeout, headers=headers) as client:
            listing = client.get(f"{base_url}/models")
            if listing.status_code in _REFUSED:
                raise ConfigError(f"{where} {_REFUSED[listing.status_code]} (HTTP "
                                  f"{listing.status_code}: {error_text(listing.content)})")
            if listing.status_code == 200:
                try:
                    served = _listed_models(listing.json())
                except ValueError:
                    served = None
                if served is not None:
                    if model in served:
                        return
                    shown = ", ".join(served[:5]) + (", ..." if len(served) > 5 else "")
                    raise ConfigError(f"{where} does not serve model {model!r} (it serves: "
                                      f"{shown or 'nothing'})")
            if listing.status_code != 404:  # a listing it would not give: the run will tell
                return
            # No /models route: ask for one token, as a run would ask for many.
            probe = client.post(f"{base_url}/chat/completions",
                                json={"model": model, "max_tokens": 1,
                                      "messages": [{"role": "user", "content": "ping"}]})
    except httpx.ConnectError as exc:
        reason = "refused the connection" if "refused" in str(exc).lower() else \
            f"could not be reached ({exc})"
        raise ConfigError(f"{where} {reason}: is it running? (model {model!r})") from None
    except httpx.TimeoutException:
        raise ConfigError(f"{where} did not answer within {ANSWER_TIMEOUT_S:g} s (model "
                          f"{model!r})") from None
    except httpx.RequestError as exc:
        raise ConfigError(f"{where} failed: {type(exc).__name__}: {exc}") from None
    status = probe.status_code
    if status in _REFUSED:
        raise ConfigError(f"{where} {_REFUSED[status]} (HTTP {status}: "
                          f"{error_text(probe.content)})")
    if status == 404:  # other refusals may be about the probe's own body: the run will tell
        raise ConfigError(f"{where} answered HTTP {status} for model {model!r}: "
                          f"{error_text(probe.content)}")

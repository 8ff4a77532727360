"""What crosses the wire: JSON values, env kwargs checked as data, and the bearer token.

Everything here is shared by the server (:mod:`colbench.serve`) and the client
(:mod:`colbench.remote`), so both sides agree on one encoding.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from colbench.errors import ConfigError

#: The environment variable a server reads its token from (``colbench serve-envs``) and a
#: client sends (``RemoteEnv``, ``--env-url``), unless one is passed explicitly.
TOKEN_ENV = "COLBENCH_ENV_TOKEN"
#: The shortest token a server accepts: a guessable token is no token.
MIN_TOKEN_CHARS = 16
#: Env kwargs a client may not send: ``tasks`` names a file on the machine that reads it,
#: and a served env must read only the task sets its operator installed (use ``split``).
CLIENT_FORBIDDEN_KWARGS = ("tasks",)


def json_value(value: Any) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays through ``item``/``tolist``,
    tuples and sets as lists, paths as text, anything else unknown as its ``str``. The
    episode records a run writes hold the same values, so a remote run records what a local
    one does."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((json_value(v) for v in value), key=repr)
    if isinstance(value, PurePath):
        return str(value)
    for method in ("item", "tolist"):  # numpy scalars, arrays
        convert = getattr(value, method, None)
        if callable(convert):
            try:
                return json_value(convert())
            except (TypeError, ValueError):
                break
    return str(value)


def dumps(payload: Any) -> bytes:
    """``payload`` as compact UTF-8 JSON (NaN and infinities kept as Python writes them,
    which Python's reader reads back)."""
    return json.dumps(json_value(payload), ensure_ascii=False,
                      separators=(",", ":"), allow_nan=True).encode("utf-8")


def check_env_kwargs(kwargs: Any, *, where: str = "env_kwargs") -> dict[str, Any]:
    """Env kwargs that arrived as data (an HTTP request), checked: a JSON object of JSON
    values that may name registered components only, judged by the one rule for specs read
    from data (:func:`colbench.data_specs.env_kwargs_refusals`: never a ``python:`` model, a
    ``module:attr`` path or ``trust_remote_code``), and never a task file (``tasks``).
    Returns the kwargs; raises ConfigError naming every offending key otherwise."""
    from colbench.data_specs import env_kwargs_refusals

    if kwargs is None:
        return {}
    if not isinstance(kwargs, Mapping):
        raise ConfigError(f"{where} must be a JSON object, got {type(kwargs).__name__}")

    def check_json(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                check_json(item, f"{path}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                check_json(item, f"{path}[{index}]")
        elif not (value is None or isinstance(value, (bool, int, float, str))):
            raise ConfigError(f"{where}: {path} is not JSON data ({type(value).__name__})")

    for key, value in kwargs.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise ConfigError(f"{where}: {key!r} is not an argument name")
        if key in CLIENT_FORBIDDEN_KWARGS:
            raise ConfigError(f"{where}: {key!r} names a file on the machine that reads it; a "
                              "served env reads the task sets its server has: pass 'split'")
        check_json(value, key)
    kept, refused = env_kwargs_refusals(kwargs, where=where)
    if refused:
        raise ConfigError(f"{where} name code to import, which a served env never does: "
                          f"{'; '.join(map(str, refused))}. Env arguments sent to a server "
                          "may name registered components only")
    return kept


class TokenCheck:
    """The server's bearer token, held as its SHA-256 only; :meth:`refusal` says why a
    request's ``Authorization`` header is refused (None: accepted). Compared in constant
    time, and the token never appears in a message or a log."""

    def __init__(self, token: str | None) -> None:
        if token is not None:
            token = token.strip()
            if len(token) < MIN_TOKEN_CHARS:
                raise ConfigError(f"the env server's token must hold at least "
                                  f"{MIN_TOKEN_CHARS} characters (e.g. from "
                                  "'python -c \"import secrets; print(secrets.token_urlsafe(32))\"')")
        self._digest = (hashlib.sha256(token.encode("utf-8")).digest()
                        if token is not None else None)

    @property
    def required(self) -> bool:
        return self._digest is not None

    def refusal(self, header: str | None) -> str | None:
        if self._digest is None:
            return None
        if not header or not header.strip():
            return ("missing bearer token: send the header 'Authorization: Bearer <token>' "
                    "with the token this server was started with")
        scheme, _, value = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            return f"the Authorization header must use the Bearer scheme, not {scheme[:20]!r}"
        digest = hashlib.sha256(value.strip().encode("utf-8")).digest()
        if not hmac.compare_digest(digest, self._digest):
            return "wrong bearer token"
        return None


def token_from_environment(explicit: str | None = None) -> str | None:
    """The token a client sends: ``explicit``, else :data:`TOKEN_ENV`, else None."""
    if explicit is not None:
        return explicit
    value = os.environ.get(TOKEN_ENV, "").strip()
    return value or None

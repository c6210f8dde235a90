"""Which model provider the service talks to, resolved once from the environment (SPEC §6).

A configured provider never falls back to the rehearsal model. The API key is held as a
:class:`~pydantic.SecretStr`, so it appears in no ``repr``, ``str``, log line or error message. The
variables and their order are at :func:`load_model_settings`.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from activities.model.codes import ModelErrorCode
from activities.model.model_sampling import (
    DEFAULT_SEED,
    DEFAULT_TEMPERATURES,
    load_seed,
    load_temperatures,
    sampling_label,
)
from activities.model.provider_profiles import DEFAULT_MAX_TOKENS, PROFILE_ALIASES, PROFILE_NAMES, ProfileName, profile
from contracts.case import REHEARSAL_LABEL
from contracts.errors import ConfigurationError
from contracts.model_limits import MAX_MODEL_TIMEOUT_SECONDS
from contracts.names import REQUEST_KINDS, RequestKind

Provider = Literal["deepseek", "openai-compatible", "rehearsal"]

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_DEFAULT_MODEL = "deepseek-chat"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOOPBACK_PLACEHOLDER_KEY = "not-needed"
REHEARSAL_BASE_URL = "http://rehearsal.invalid/v1"
"""The rehearsal model's address; ``.invalid`` never resolves, so only an injected in-process transport answers."""
KEYLESS_PLACEHOLDER_KEY = REHEARSAL_LABEL
"""What the SDK is given for a provider without a key (the rehearsal model): it refuses to start with none."""
REQUEST_TIMEOUT_SECONDS = 40.0
MAX_REQUEST_TIMEOUT_SECONDS = MAX_MODEL_TIMEOUT_SECONDS
"""600 s: the model activities' start-to-close timeout is derived from it, so a slow reply is always
the gateway's own timeout."""
MAX_TOKENS_RANGE = (16, 32_768)


class ModelSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Provider
    model: str
    base_url: str
    api_key: SecretStr | None
    timeout_seconds: float = REQUEST_TIMEOUT_SECONDS
    """The general per-request timeout (``SUPPORT_MODEL_TIMEOUT_SECONDS``)."""
    timeouts: dict[RequestKind, float] = Field(
        default_factory=lambda: dict.fromkeys(REQUEST_KINDS, REQUEST_TIMEOUT_SECONDS)
    )
    """Each request kind's timeout: its ``SUPPORT_MODEL_TIMEOUT_SECONDS_<KIND>``, else the general one."""
    profile: ProfileName = "generic"
    max_tokens: dict[RequestKind, int] = Field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS))
    temperatures: dict[RequestKind, float | None] = Field(default_factory=lambda: {**DEFAULT_TEMPERATURES})
    """Each request kind's temperature (:mod:`activities.model.model_sampling`); None: the server's default."""
    seed: int | None = DEFAULT_SEED
    """Sent where the profile's server takes a seed; None: no seed."""
    reviewer: ModelSettings | None = None
    """A separate model for review requests; None: the model above reviews too."""

    @property
    def is_rehearsal(self) -> bool:
        return self.provider == REHEARSAL_LABEL

    def describe(self) -> str:
        """One loggable line: provider, model and endpoint (without any credentials)."""
        endpoint = "in-process" if self.is_rehearsal else _display_url(self.base_url)
        line = f"provider={self.provider} model={self.model} endpoint={endpoint}"
        if not self.is_rehearsal:
            line += f" profile={self.profile} timeout={_timeouts_label(self.timeouts)} " + sampling_label(
                self.temperatures, self.seed, sends_seed=profile(self.profile).sends_seed
            )
        if self.reviewer is not None:
            line += f"; reviewer: {self.reviewer.describe()}"
        return line


def _timeouts_label(timeouts: Mapping[RequestKind, float]) -> str:
    """``40s`` when every kind has the same timeout, else ``plan 40s, investigate 40s, compose 300s, review 40s``."""
    values = set(timeouts.values())
    if len(values) == 1:
        return f"{values.pop():g}s"
    return ", ".join(f"{kind} {seconds:g}s" for kind, seconds in timeouts.items())


def load_model_settings(environ: Mapping[str, str] | None = None) -> ModelSettings:
    """Resolve the provider from ``environ`` (default: ``os.environ``); raise ConfigurationError.

    Resolution order:

    1. ``DEEPSEEK_API_KEY`` set: DeepSeek's endpoint, model ``DEEPSEEK_MODEL`` (default ``deepseek-chat``).
    2. ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` set: any OpenAI-compatible endpoint (OpenAI, vLLM,
       Ollama, llama.cpp, ...), model ``SUPPORT_MODEL`` (required). A local server on a loopback address
       may run without a key; anything else needs ``OPENAI_API_KEY``.
    3. Nothing set: the deterministic rehearsal model, labelled ``rehearsal``, addressed at
       :data:`REHEARSAL_BASE_URL`. No request leaves the process: the worker gives the gateway an HTTP
       client whose transport answers it (package ``rehearsal``).

    Tuning (all optional; see :mod:`activities.model.provider_profiles`):

    - ``SUPPORT_MODEL_PROFILE``: the server's dialect (generic, openai, deepseek, vllm, ollama,
      llama.cpp or llama-server, llama-cpp-python); default ``deepseek`` with ``DEEPSEEK_API_KEY``, ``openai`` for
      api.openai.com, else ``generic``.
    - ``SUPPORT_MODEL_TIMEOUT_SECONDS`` (every kind) and ``SUPPORT_MODEL_TIMEOUT_SECONDS_<KIND>``:
      per-request timeouts in seconds (default 40, from 1 to 600; the model activities' start-to-close
      timeout is derived from the 600 s ceiling, :mod:`contracts.model_limits`).
    - ``SUPPORT_MODEL_MAX_TOKENS`` (every kind) and ``SUPPORT_MODEL_MAX_TOKENS_<KIND>`` (PLAN,
      INVESTIGATE, COMPOSE, REVIEW): completion-token limits.
    - ``SUPPORT_MODEL_TEMPERATURE`` (every kind) and ``SUPPORT_MODEL_TEMPERATURE_<KIND>``: 0 to 2, or
      ``default`` to send none (default 0); ``SUPPORT_MODEL_SEED``: 0 to 2147483647 or ``default``
      (default 7), sent where the server takes one (:mod:`activities.model.model_sampling`).
    - ``SUPPORT_REVIEW_MODEL`` (with optional ``SUPPORT_REVIEW_BASE_URL``, ``SUPPORT_REVIEW_API_KEY``,
      ``SUPPORT_REVIEW_PROFILE``): a separate reviewer model for ``review_answer``; only beside a
      configured provider. Without them the main model reviews.
    """
    env = os.environ if environ is None else environ
    settings = _load_main(env)
    if settings.is_rehearsal:
        if any(_get(env, name) for name in REVIEW_VARIABLES):
            raise ConfigurationError(
                ModelErrorCode.REVIEWER_WITHOUT_PROVIDER,
                "SUPPORT_REVIEW_* is set but no model provider is configured; a separate reviewer is "
                "only used beside DEEPSEEK_API_KEY or OPENAI_API_KEY/OPENAI_BASE_URL.",
            )
        # the tuning variables are checked for the rehearsal model too: a bad value is refused, not ignored
        return settings.model_copy(update=_tuning(env))
    tuned = settings.model_copy(
        update={"profile": _profile(env, "SUPPORT_MODEL_PROFILE", _detected_profile(settings.base_url))} | _tuning(env)
    )
    return tuned.model_copy(update={"reviewer": _reviewer(env, tuned)})


def _tuning(env: Mapping[str, str]) -> dict[str, object]:
    """The settings every model shares, from the tuning variables (a bad value is a ConfigurationError)."""
    return {
        "timeout_seconds": _timeout(env),
        "timeouts": _timeouts(env),
        "max_tokens": _max_tokens(env),
        "temperatures": load_temperatures(env),
        "seed": load_seed(env),
    }


REVIEW_VARIABLES = (
    "SUPPORT_REVIEW_MODEL",
    "SUPPORT_REVIEW_BASE_URL",
    "SUPPORT_REVIEW_API_KEY",
    "SUPPORT_REVIEW_PROFILE",
)


def _load_main(env: Mapping[str, str]) -> ModelSettings:
    deepseek_key = _get(env, "DEEPSEEK_API_KEY")
    openai_key = _get(env, "OPENAI_API_KEY")
    openai_url = _get(env, "OPENAI_BASE_URL")

    if deepseek_key:
        return ModelSettings(
            provider="deepseek",
            model=_get(env, "DEEPSEEK_MODEL") or DEEPSEEK_DEFAULT_MODEL,
            base_url=DEEPSEEK_BASE_URL,
            api_key=SecretStr(deepseek_key),
        )
    if openai_key or openai_url:
        base_url = _checked_base_url(openai_url or OPENAI_DEFAULT_BASE_URL, "OPENAI_BASE_URL")
        if not openai_key:
            if not _is_loopback(base_url):
                raise ConfigurationError(
                    ModelErrorCode.API_KEY_MISSING,
                    "OPENAI_BASE_URL points to a non-local endpoint but OPENAI_API_KEY is not set; "
                    "set OPENAI_API_KEY (a key is only optional for servers on a loopback address).",
                )
            openai_key = LOOPBACK_PLACEHOLDER_KEY
        model = _get(env, "SUPPORT_MODEL")
        if not model:
            raise ConfigurationError(
                ModelErrorCode.MODEL_NOT_CONFIGURED,
                "SUPPORT_MODEL is not set: name the model to use at the OpenAI-compatible endpoint "
                "(for example SUPPORT_MODEL=gpt-4o-mini or the model id your vLLM/Ollama server serves).",
            )
        return ModelSettings(
            provider="openai-compatible", model=model, base_url=base_url, api_key=SecretStr(openai_key)
        )
    return ModelSettings(provider="rehearsal", model=REHEARSAL_LABEL, base_url=REHEARSAL_BASE_URL, api_key=None)


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _reviewer(env: Mapping[str, str], main: ModelSettings) -> ModelSettings | None:
    if not any(_get(env, name) for name in REVIEW_VARIABLES):
        return None
    model = _get(env, "SUPPORT_REVIEW_MODEL")
    if not model:
        raise ConfigurationError(
            ModelErrorCode.MODEL_NOT_CONFIGURED,
            "SUPPORT_REVIEW_* is set but SUPPORT_REVIEW_MODEL is not: name the reviewer model.",
        )
    url = _get(env, "SUPPORT_REVIEW_BASE_URL")
    base_url = _checked_base_url(url, "SUPPORT_REVIEW_BASE_URL") if url else main.base_url
    same_endpoint = base_url == main.base_url
    key = _get(env, "SUPPORT_REVIEW_API_KEY")
    api_key = SecretStr(key) if key else (main.api_key if same_endpoint else None)
    if api_key is None:
        if not _is_loopback(base_url):
            raise ConfigurationError(
                ModelErrorCode.API_KEY_MISSING,
                "SUPPORT_REVIEW_BASE_URL points to another non-local endpoint but SUPPORT_REVIEW_API_KEY is not set.",
            )
        api_key = SecretStr(LOOPBACK_PLACEHOLDER_KEY)
    detected = main.profile if same_endpoint else _detected_profile(base_url)
    return ModelSettings(
        provider="deepseek" if base_url == DEEPSEEK_BASE_URL else "openai-compatible",
        model=model,
        base_url=base_url,
        api_key=api_key,
        timeout_seconds=main.timeout_seconds,
        timeouts=main.timeouts,
        profile=_profile(env, "SUPPORT_REVIEW_PROFILE", detected),
        max_tokens=main.max_tokens,
        temperatures=main.temperatures,
        seed=main.seed,
    )


def _detected_profile(base_url: str) -> ProfileName:
    host = urlsplit(base_url).hostname or ""
    if base_url == DEEPSEEK_BASE_URL or host == "api.deepseek.com":
        return "deepseek"
    return "openai" if host == "api.openai.com" else "generic"


def _profile(env: Mapping[str, str], name: str, default: ProfileName) -> ProfileName:
    value = _get(env, name)
    if value is None:
        return default
    for known in PROFILE_NAMES:
        if value.lower() == known:
            return known
    if value.lower() in PROFILE_ALIASES:
        return PROFILE_ALIASES[value.lower()]
    names = ", ".join([*PROFILE_NAMES, *PROFILE_ALIASES])
    raise ConfigurationError(
        ModelErrorCode.INVALID_MODEL_PROFILE, f"{name} must be one of {names} (got {value[:40]!r})."
    )


TIMEOUT_ENV = "SUPPORT_MODEL_TIMEOUT_SECONDS"


def _timeout(env: Mapping[str, str], name: str = TIMEOUT_ENV, default: float = REQUEST_TIMEOUT_SECONDS) -> float:
    value = _get(env, name)
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 1.0 <= seconds <= MAX_REQUEST_TIMEOUT_SECONDS:  # also refuses nan
        raise ConfigurationError(
            ModelErrorCode.INVALID_MODEL_TIMEOUT,
            f"{name} must be a number of seconds from 1 to {MAX_REQUEST_TIMEOUT_SECONDS:g}.",
        )
    return seconds


def _timeouts(env: Mapping[str, str]) -> dict[RequestKind, float]:
    every = _timeout(env)
    return {kind: _timeout(env, f"{TIMEOUT_ENV}_{kind.upper()}", every) for kind in REQUEST_KINDS}


def _max_tokens(env: Mapping[str, str]) -> dict[RequestKind, int]:
    limits = dict(DEFAULT_MAX_TOKENS)
    low, high = MAX_TOKENS_RANGE
    every = "SUPPORT_MODEL_MAX_TOKENS"
    for kind in REQUEST_KINDS:
        name = f"{every}_{kind.upper()}"
        value = _get(env, name) or _get(env, every)
        if value is None:
            continue
        if not value.isdigit() or not low <= int(value) <= high:
            which = name if _get(env, name) else every
            raise ConfigurationError(
                ModelErrorCode.INVALID_MAX_TOKENS, f"{which} must be a whole number from {low} to {high}."
            )
        limits[kind] = int(value)
    return limits


def _checked_base_url(url: str, variable: str) -> str:
    """Accept an absolute http(s) URL with a host and no user-info; the URL is never echoed."""
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        valid = False
    if not valid or any(ch.isspace() for ch in url):
        raise ConfigurationError(
            ModelErrorCode.INVALID_BASE_URL,
            f"{variable} is not a valid absolute http(s) URL (expected e.g. http://localhost:8000/v1).",
        )
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(
            ModelErrorCode.INVALID_BASE_URL,
            f"{variable} must not contain credentials; put the key in the matching *_API_KEY variable instead.",
        )
    return url.rstrip("/")


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _display_url(url: str) -> str:
    """The URL without user-info, query or fragment, for logs and error messages."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return f"{parts.scheme}://{netloc}{parts.path}"

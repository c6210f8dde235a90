"""Which model provider the service talks to, resolved once from the environment (SPEC §6).

Resolution order:

1. ``DEEPSEEK_API_KEY`` set: DeepSeek's endpoint, model ``DEEPSEEK_MODEL`` (default ``deepseek-chat``).
2. ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` set: any OpenAI-compatible endpoint (OpenAI, vLLM,
   Ollama, llama.cpp, ...), model ``SUPPORT_MODEL`` (required). A local server on a loopback address
   may run without a key; anything else needs ``OPENAI_API_KEY``.
3. Nothing set: the deterministic rehearsal model, labelled ``rehearsal``, addressed at
   :data:`REHEARSAL_BASE_URL`. No request leaves the process: the worker gives the gateway an HTTP
   client whose transport answers it (package ``rehearsal``).

A configured provider never falls back to the rehearsal model. The API key is held as a
:class:`~pydantic.SecretStr`, so it appears in no ``repr``, ``str``, log line or error message.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from contracts.case import REHEARSAL_LABEL
from contracts.errors import ConfigurationError

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


class ModelSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Provider
    model: str
    base_url: str
    api_key: SecretStr | None
    timeout_seconds: float = REQUEST_TIMEOUT_SECONDS

    @property
    def is_rehearsal(self) -> bool:
        return self.provider == REHEARSAL_LABEL

    def describe(self) -> str:
        """One loggable line: provider, model and endpoint (without any credentials)."""
        endpoint = "in-process" if self.is_rehearsal else _display_url(self.base_url)
        return f"provider={self.provider} model={self.model} endpoint={endpoint}"


def load_model_settings(environ: Mapping[str, str] | None = None) -> ModelSettings:
    """Resolve the provider from ``environ`` (default: ``os.environ``); raise ConfigurationError."""
    env = os.environ if environ is None else environ
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
        base_url = _checked_base_url(openai_url or OPENAI_DEFAULT_BASE_URL)
        if not openai_key:
            if not _is_loopback(base_url):
                raise ConfigurationError(
                    "api_key_missing",
                    "OPENAI_BASE_URL points to a non-local endpoint but OPENAI_API_KEY is not set; "
                    "set OPENAI_API_KEY (a key is only optional for servers on a loopback address).",
                )
            openai_key = LOOPBACK_PLACEHOLDER_KEY
        model = _get(env, "SUPPORT_MODEL")
        if not model:
            raise ConfigurationError(
                "model_not_configured",
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


def _checked_base_url(url: str) -> str:
    """Accept an absolute http(s) URL with a host and no user-info; the URL is never echoed."""
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        valid = False
    if not valid or any(ch.isspace() for ch in url):
        raise ConfigurationError(
            "invalid_base_url",
            "OPENAI_BASE_URL is not a valid absolute http(s) URL (expected e.g. http://localhost:8000/v1).",
        )
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(
            "invalid_base_url",
            "OPENAI_BASE_URL must not contain credentials; put the key in OPENAI_API_KEY instead.",
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

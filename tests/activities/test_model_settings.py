"""Provider resolution from the environment, and the API key never leaking."""

from __future__ import annotations

import pytest

from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import load_model_settings
from contracts.errors import ConfigurationError

CANARY = "sk-canary-7f3a9c1e5b2d4e6f"


def test_deepseek_key_selects_deepseek_with_default_model() -> None:
    settings = load_model_settings({"DEEPSEEK_API_KEY": CANARY})
    assert settings.provider == "deepseek"
    assert settings.base_url == "https://api.deepseek.com"
    assert settings.model == "deepseek-chat"
    assert settings.api_key is not None and settings.api_key.get_secret_value() == CANARY


def test_deepseek_model_and_precedence_over_openai() -> None:
    settings = load_model_settings(
        {"DEEPSEEK_API_KEY": CANARY, "DEEPSEEK_MODEL": "deepseek-reasoner", "OPENAI_API_KEY": "other"}
    )
    assert (settings.provider, settings.model) == ("deepseek", "deepseek-reasoner")


def test_openai_compatible_needs_support_model() -> None:
    settings = load_model_settings({"OPENAI_API_KEY": CANARY, "SUPPORT_MODEL": "gpt-4o-mini"})
    assert settings.provider == "openai-compatible"
    assert settings.base_url == "https://api.openai.com/v1"
    assert settings.model == "gpt-4o-mini"

    with pytest.raises(ConfigurationError) as raised:
        load_model_settings({"OPENAI_API_KEY": CANARY})
    assert raised.value.code == "model_not_configured"
    assert "SUPPORT_MODEL" in str(raised.value)


def test_local_server_without_key_on_loopback_only() -> None:
    for url in ("http://localhost:11434/v1", "http://127.0.0.1:8000/v1", "http://[::1]:8080/v1"):
        settings = load_model_settings({"OPENAI_BASE_URL": url, "SUPPORT_MODEL": "qwen2.5"})
        assert settings.base_url == url
        assert settings.api_key is not None and settings.api_key.get_secret_value() == "not-needed"

    with pytest.raises(ConfigurationError) as raised:
        load_model_settings({"OPENAI_BASE_URL": "https://llm.example.com/v1", "SUPPORT_MODEL": "m"})
    assert raised.value.code == "api_key_missing"


@pytest.mark.parametrize("url", ["not a url", "ftp://host/v1", "http://", "localhost:8000", "http://h:port/v1"])
def test_malformed_base_url_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        load_model_settings({"OPENAI_BASE_URL": url, "OPENAI_API_KEY": CANARY, "SUPPORT_MODEL": "m"})
    assert raised.value.code == "invalid_base_url"


def test_nothing_configured_means_rehearsal() -> None:
    settings = load_model_settings({"OPENAI_API_KEY": "  ", "DEEPSEEK_API_KEY": ""})
    assert (settings.provider, settings.model) == ("rehearsal", "rehearsal")
    assert settings.is_rehearsal and settings.api_key is None


def test_canary_key_never_appears_in_repr_str_or_errors() -> None:
    environments = [
        {"DEEPSEEK_API_KEY": CANARY},
        {"OPENAI_API_KEY": CANARY, "SUPPORT_MODEL": "m", "OPENAI_BASE_URL": "https://llm.example.com/v1"},
    ]
    for env in environments:
        settings = load_model_settings(env)
        gateway = ModelGateway(settings)
        for text in (repr(settings), str(settings), settings.describe(), repr(settings.model_dump())):
            assert CANARY not in text
        assert CANARY not in repr(gateway.settings)

    failing = [
        {"OPENAI_API_KEY": CANARY},
        {"OPENAI_API_KEY": CANARY, "SUPPORT_MODEL": "m", "OPENAI_BASE_URL": f"bad url {CANARY}"},
        {"OPENAI_BASE_URL": f"https://{CANARY}.example.com/v1", "SUPPORT_MODEL": "m"},
        {"OPENAI_API_KEY": "k", "SUPPORT_MODEL": "m", "OPENAI_BASE_URL": f"https://user:{CANARY}@h/v1"},
    ]
    for env in failing:
        with pytest.raises(ConfigurationError) as raised:
            load_model_settings(env)
        assert CANARY not in str(raised.value) and CANARY not in repr(raised.value)

"""The operator's price table: exact micro-dollars, every bad file refused in one line naming the file
and the entry, the file read again when it changes, and the price on each reply's meta."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import httpx2
import pytest

from activities.model.model_gateway import ModelGateway
from activities.model.model_prices import DEFAULT_PRICES_FILE, PRICES_ENV, ModelPrices, read_price_table
from activities.model.model_settings import load_model_settings
from contracts.errors import ConfigurationError
from contracts.knowledge import Language
from contracts.model_io import PlanRequest
from contracts.usage import CaseUsage, ModelPrice
from tests.activities.test_model_gateway import PLAN_JSON, QUESTION, completion, ok

GOOD = """
[openai-compatible."m-1-2026"]
prompt_usd_per_mtok = "0.15"
completion_usd_per_mtok = "0.60"

[openai-compatible."qwen2.5:7b"]   # served on our own hardware
prompt_usd_per_mtok = "0"
completion_usd_per_mtok = 0

[deepseek.tiny]
prompt_usd_per_mtok = "0.000001"
completion_usd_per_mtok = "12345678901234567890123456789.123456"
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _changed(path: Path, text: str) -> None:
    """Rewrite ``path`` so that its modification time surely differs (a coarse clock could repeat it)."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def test_a_good_table_converts_each_price_to_micro_dollars_exactly(tmp_path: Path) -> None:
    table = read_price_table(_write(tmp_path / "prices.toml", GOOD))
    assert table.get("openai-compatible", "m-1-2026") == ModelPrice(
        prompt_micro_usd_per_mtok=150_000, completion_micro_usd_per_mtok=600_000
    )
    assert table.get("openai-compatible", "qwen2.5:7b") == ModelPrice(
        prompt_micro_usd_per_mtok=0, completion_micro_usd_per_mtok=0
    )
    tiny = table.get("deepseek", "tiny")
    assert tiny is not None and tiny.prompt_micro_usd_per_mtok == 1
    # 35 significant digits: beyond Decimal's default 28-digit context, still exact
    assert tiny.completion_micro_usd_per_mtok == 12345678901234567890123456789_123456
    assert table.get("deepseek", "m-1-2026") is None  # keyed by provider and model
    assert table.get("openai-compatible", "m-1") is None  # the model as the provider reports it, exactly


def test_priced_replies_sum_to_the_exact_cost(tmp_path: Path) -> None:
    price = read_price_table(_write(tmp_path / "prices.toml", GOOD)).get("openai-compatible", "m-1-2026")
    usage = CaseUsage()
    usage.add("plan_case", 1234, 56, price)
    usage.add("compose_answer", 3000, 700, price)
    # 4234 * 0.15 + 756 * 0.60 = 635.1 + 453.6 micro-dollars = 0.0010887 USD
    assert usage.cost_pico_usd == 1_088_700_000
    assert usage.cost_label() == "0.001089 USD"


ENTRY = '[openai-compatible."m-1"]\n'
BAD_FILES = [
    (
        ENTRY + 'prompt_usd_per_mtok = "0.1234567"\ncompletion_usd_per_mtok = "1"\n',
        '[openai-compatible."m-1"] prompt_usd_per_mtok: "0.1234567" has 7 decimals; at most 6 (a micro-dollar)',
    ),
    (
        ENTRY + 'prompt_usd_per_mtok = "-0.10"\ncompletion_usd_per_mtok = "1"\n',
        '[openai-compatible."m-1"] prompt_usd_per_mtok: "-0.10" is negative',
    ),
    (
        ENTRY + 'prompt_usd_per_mtok = "1"\ncompletion_usd_per_mtok = -2\n',
        '[openai-compatible."m-1"] completion_usd_per_mtok: -2 is negative',
    ),
    (
        ENTRY + 'prompt_usd_per_mtok = 0.15\ncompletion_usd_per_mtok = "1"\n',
        '[openai-compatible."m-1"] prompt_usd_per_mtok: write the price as a string ("0.15"): '
        "a TOML float is not exact",
    ),
    (
        ENTRY + 'prompt_usd_per_mtok = "1e-3"\ncompletion_usd_per_mtok = "1"\n',
        '[openai-compatible."m-1"] prompt_usd_per_mtok: "1e-3" is not a decimal number of US dollars, e.g. "0.15"',
    ),
    (
        ENTRY + 'prompt_usd_per_mtok = "1"\ncompletion_usd_per_mtok = "1"\ncurrency = "EUR"\n',
        '[openai-compatible."m-1"]: unknown key "currency"; an entry has prompt_usd_per_mtok and '
        "completion_usd_per_mtok",
    ),
    (
        ENTRY + 'prompt_usd_per_mtok = "1"\n',
        '[openai-compatible."m-1"]: completion_usd_per_mtok is missing',
    ),
    (
        '[openai."gpt"]\nprompt_usd_per_mtok = "1"\ncompletion_usd_per_mtok = "1"\n',
        '["openai"]: unknown provider; a table per provider: deepseek, openai-compatible',
    ),
    (
        '[rehearsal.rehearsal]\nprompt_usd_per_mtok = "0"\ncompletion_usd_per_mtok = "0"\n',
        '["rehearsal"]: unknown provider; a table per provider: deepseek, openai-compatible',
    ),
    (
        'deepseek = "0.27"\n',
        '"deepseek": expected one table per model, e.g. [deepseek."MODEL"]',
    ),
    (
        '[deepseek]\nchat = "0.27"\n',
        '[deepseek."chat"]: expected a table with prompt_usd_per_mtok and completion_usd_per_mtok',
    ),
    (
        '[deepseek." "]\nprompt_usd_per_mtok = "1"\ncompletion_usd_per_mtok = "1"\n',
        '[deepseek." "]: the model name is empty',
    ),
    (
        ENTRY + 'prompt_usd_per_mtok = "0.15\n',
        "not valid TOML: Illegal character '\\n' (at line 2, column 28)",
    ),
]


@pytest.mark.parametrize(("text", "problem"), BAD_FILES, ids=[problem[:40] for _, problem in BAD_FILES])
def test_each_bad_table_is_refused_in_one_line_naming_the_file_and_the_entry(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = _write(tmp_path / "prices.toml", text)
    with pytest.raises(ConfigurationError) as raised:
        ModelPrices(path)
    assert raised.value.code == "invalid_model_prices"
    assert str(raised.value) == f"invalid_model_prices: {path}: {problem}"
    assert "\n" not in str(raised.value)


def test_the_named_file_must_exist_and_unset_means_the_packaged_table_which_prices_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(ConfigurationError, match=f"{missing}: no such file"):
        ModelPrices.from_environment({PRICES_ENV: str(missing)})
    default = ModelPrices.from_environment({PRICES_ENV: " "})
    assert default.path == DEFAULT_PRICES_FILE
    assert read_price_table(DEFAULT_PRICES_FILE).prices == {}
    assert default.price("openai-compatible", "m-1-2026") is None
    assert default.price("rehearsal", "rehearsal") is None


def test_the_table_is_read_again_when_the_file_changes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _write(tmp_path / "prices.toml", GOOD)
    prices = ModelPrices(path)
    assert prices.price("openai-compatible", "m-1-2026") == ModelPrice(
        prompt_micro_usd_per_mtok=150_000, completion_micro_usd_per_mtok=600_000
    )
    _changed(path, GOOD.replace('"0.15"', '"0.25"', 1))
    priced = prices.price("openai-compatible", "m-1-2026")
    assert priced is not None and priced.prompt_micro_usd_per_mtok == 250_000

    with caplog.at_level(logging.WARNING, logger="activities.model.model_prices"):
        _changed(path, GOOD.replace('"0.25"', '"-1"', 1).replace('"0.15"', '"-1"', 1))
        assert prices.price("openai-compatible", "m-1-2026") is None  # a broken table prices nothing
        assert prices.price("openai-compatible", "m-1-2026") is None
    [warning] = [record.getMessage() for record in caplog.records]  # once per change, not per reply
    assert '"-1" is negative' in warning and "priced as unknown until the file is fixed" in warning

    path.unlink()
    assert prices.price("openai-compatible", "m-1-2026") is None
    _write(path, GOOD)
    assert prices.price("openai-compatible", "m-1-2026") is not None


async def test_each_reply_carries_the_price_of_the_model_the_provider_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PRICES_ENV, str(_write(tmp_path / "prices.toml", GOOD)))
    settings = load_model_settings(
        {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "https://llm.example.com/v1", "SUPPORT_MODEL": "m-1"}
    )
    request = PlanRequest(case_id="c-1", question=QUESTION, language=Language.EN)

    def gateway(body: dict) -> ModelGateway:
        return ModelGateway(settings, httpx2.AsyncClient(transport=httpx2.MockTransport(ok(body))))

    priced = await gateway(completion(PLAN_JSON)).plan(request)  # the reply names model m-1-2026
    assert priced.meta.model == "m-1-2026"
    assert priced.meta.price == ModelPrice(prompt_micro_usd_per_mtok=150_000, completion_micro_usd_per_mtok=600_000)
    unpriced = await gateway(completion(PLAN_JSON) | {"model": "m-2"}).plan(request)
    assert (unpriced.meta.model, unpriced.meta.price) == ("m-2", None)

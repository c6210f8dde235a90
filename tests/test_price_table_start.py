"""A worker whose ``SUPPORT_MODEL_PRICES`` table is bad refuses to start: one line, exit 2, before it
connects (the helpers and the closed Temporal address are those of test_start_checks.py)."""

from __future__ import annotations

from pathlib import Path

from cli.exit_codes import ExitCode
from tests.conftest import DemoKeys
from tests.test_start_checks import refusal, worker


def test_a_bad_price_table_refuses_the_worker_start_in_one_line(tmp_path: Path, demo_keys: DemoKeys) -> None:
    bad = tmp_path / "prices.toml"
    entry = '[deepseek."deepseek-chat"]\nprompt_usd_per_mtok = "0.1234567"\ncompletion_usd_per_mtok = "1"\n'
    bad.write_text(entry, encoding="utf-8")
    line = refusal(worker(tmp_path / "state", demo_keys, SUPPORT_MODEL_PRICES=str(bad)))
    assert line == (
        f'worker: configuration error: invalid_model_prices: {bad}: [deepseek."deepseek-chat"] '
        'prompt_usd_per_mtok: "0.1234567" has 7 decimals; at most 6 (a micro-dollar)'
    )
    missing = refusal(worker(tmp_path / "state", demo_keys, SUPPORT_MODEL_PRICES=str(tmp_path / "none.toml")))
    assert missing.startswith(f"worker: configuration error: invalid_model_prices: {tmp_path / 'none.toml'}: no such")


def test_a_good_price_table_passes_the_start_checks(tmp_path: Path, demo_keys: DemoKeys) -> None:
    good = tmp_path / "prices.toml"
    good.write_text('[deepseek."deepseek-chat"]\nprompt_usd_per_mtok = "1"\ncompletion_usd_per_mtok = "2"\n')
    line = refusal(worker(tmp_path / "state", demo_keys, SUPPORT_MODEL_PRICES=str(good)), ExitCode.UNAVAILABLE)
    assert line.startswith("worker: unavailable: temporal_unavailable: cannot reach Temporal")

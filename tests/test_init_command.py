"""``starter.py init`` as a person reads it: one sentence about the fixture rows, never a Python repr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _init(state_dir: Path) -> str:
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(state_dir), "init"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"COLUMNS": "200", "PATH": ""})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_init_says_what_it_added_then_that_it_kept_everything(tmp_path: Path) -> None:
    first = _init(tmp_path)
    assert (
        "added 169 fixture rows (9 products, 5 product_variants, 24 orders, 24 shipping_addresses, "
        "3 customer_accounts, 24 invoices, 80 shipment_events)" in first
    ), first
    again = _init(tmp_path)
    assert "all 169 fixture rows were already there (nothing reset)" in again, again
    assert "SeedReport(" not in first + again and "{" not in first + again

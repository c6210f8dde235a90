"""``python -m retail_server``'s commands on bad input: one line on stderr and a non-zero exit, nothing
half loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from commerce_server.db import make_engine
from retail_server.__main__ import main
from retail_server.records import export_database, is_loaded
from tests.retail_server.test_retail_service import _database


def test_load_refuses_a_file_that_is_not_the_domains_and_a_second_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    bad = tmp_path / "bad.json"
    bad.write_text('{"users": {"x": {"user_id": 1}}}', encoding="utf-8")
    assert main(["--state-dir", str(state), "load", "--tau2-db", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("retail_server: ") and "is not τ²-bench's retail database" in err and err.count("\n") == 1
    assert main(["--state-dir", str(state), "load", "--tau2-db", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err

    good = tmp_path / "db.json"
    good.write_text(_database().model_dump_json(), encoding="utf-8")
    assert main(["--state-dir", str(state), "load", "--tau2-db", str(good)]) == 0
    assert "loaded 2 products, 2 customers, 3 orders" in capsys.readouterr().out
    assert main(["--state-dir", str(state), "load", "--tau2-db", str(good)]) == 2
    assert "holds a catalogue already" in capsys.readouterr().err
    engine = make_engine(f"sqlite:///{state / 'retail.db'}")
    assert is_loaded(engine) and export_database(engine) == _database()
    engine.dispose()


def test_serving_needs_a_customer_and_a_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--state-dir", str(tmp_path), "--customer", "ana_diaz_1"])
    assert exited.value.code == 2
    assert "serving over stdio needs --customer and --case" in capsys.readouterr().err

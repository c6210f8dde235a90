"""The parallel run's groups (tests/parallel.py): the suites that run one test at a time are named by
folders that exist, and a test id maps to its group whatever its parameters."""

from __future__ import annotations

from pathlib import Path

from tests.parallel import SERIAL_GROUPS, serial_group

TESTS = Path(__file__).parent


def test_every_serial_group_names_a_suite_that_exists() -> None:
    assert all((TESTS / folder).is_dir() for folder in SERIAL_GROUPS)


def test_a_test_id_maps_to_its_suites_group_and_no_other() -> None:
    assert serial_group("tests/browser/test_web_ui.py::test_x") == "browser"
    assert serial_group("tests/faults/test_faults_failover.py::test_y[a/b::c]") == "processes"
    assert serial_group("tests/cluster/test_three_workers.py::test_z") == "processes"
    assert serial_group("tests/e2e/test_cases.py::test_browser") is None
    assert serial_group("tests/test_layers.py::test_faults") is None

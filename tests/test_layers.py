"""tests/layers.py: which layer a test lands in, and the guard that makes a misplaced one fail."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.layers import NeedsFullLayer, install_guard, process_names


def _starts_a_process() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


class _Runner:
    def run(self) -> None:
        _starts_a_process()


def _pure(value: int) -> int:
    return value * 2


def _test_calling_a_helper() -> None:
    _Runner().run()


def _test_that_is_pure() -> None:
    assert _pure(2) == 4


def test_a_process_started_in_a_helper_it_calls_puts_a_test_in_the_full_layer() -> None:
    assert process_names(_test_calling_a_helper) == {"subprocess"}
    assert process_names(_test_that_is_pure) == frozenset()


def test_a_process_started_in_product_code_a_test_calls_counts_too() -> None:
    from activities.commerce.commerce_sessions import CommerceSessionPool

    assert process_names(CommerceSessionPool)


def test_the_fast_layers_guard_refuses_processes_and_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    install_guard(monkeypatch)
    with pytest.raises(NeedsFullLayer, match="starts a process"):
        _starts_a_process()
    with socket.socket() as probe, pytest.raises(NeedsFullLayer, match="opens a connection"):
        probe.connect(("127.0.0.1", 9))
    left, right = socket.socketpair()  # what an event loop needs still works
    left.close()
    right.close()

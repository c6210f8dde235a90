"""The two test layers: ``make check`` runs what needs no Temporal server, process, database server or
network; ``make test`` runs everything.

A test is in the full layer (marker ``integration``, set here at collection, never by hand) when it
uses a fixture that starts or reaches a server, carries a marker that says so (``slow``, ``postgres``,
``browser``), or its code, or any test-support function or class it calls, names something that starts
a process or opens a connection. So a new test lands in its layer without anyone remembering a marker.
A test that slips through anyway fails loudly in ``make check``: there, starting a process or opening
an internet-family socket raises :class:`NeedsFullLayer`, which names what to add below.
"""

from __future__ import annotations

import dis
import functools
import importlib
import inspect
import os
import socket
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LAYER_ENV = "SUPPORT_TEST_LAYER"
"""``check`` while ``make check`` runs: the guard below is then on."""
INTEGRATION = "integration"

FULL_LAYER_FIXTURES = frozenset(
    {
        "temporal_server",
        "temporal_client",
        "world",
        "shared_world",
        "fault_world",
        "workers",
        "in_process_worker",
        "adversary",
        "provider",
        "cluster",
        "commerce_schema",
        "commerce_service",
    }
)
"""Fixtures that start a server or a process, or connect to one."""
FULL_LAYER_MARKERS = frozenset({"slow", "postgres", "browser"})
PROCESS_NAMES = frozenset(
    {
        "subprocess",
        "Popen",
        "create_subprocess_exec",
        "create_subprocess_shell",
        "stdio_client",
        "streamablehttp_client",
        "start_dev_server",
        "start_codec_server",
        "rehearsal_stack",
        "Client",
        "WorkflowEnvironment",
        "uvicorn",
        "start_server",
    }
)
"""Names whose use in a test, or in any code of the project it calls, means a process or a connection
(PostgreSQL is the ``postgres`` marker's)."""


class NeedsFullLayer(RuntimeError):
    """A test in ``make check``'s layer started a process or opened a network connection."""


ROOT = Path(__file__).resolve().parents[1]
_FOUND: dict[int, frozenset[str]] = {}


def _is_ours(target: Any) -> bool:
    """Whether ``target`` is a function or class of this project (tests and support code included)."""
    if not (inspect.isfunction(target) or isinstance(target, type)):
        return False
    return _module_is_ours(getattr(target, "__module__", "") or "")


@functools.cache
def _module_is_ours(name: str) -> bool:
    path = Path(getattr(sys.modules.get(name), "__file__", None) or "/").resolve()
    return path.is_relative_to(ROOT) and ".venv" not in path.relative_to(ROOT).parts


def _codes(target: Any) -> Iterator[tuple[types.CodeType, dict[str, Any]]]:
    functions = [inspect.unwrap(target)] if inspect.isfunction(target) else []
    if isinstance(target, type):
        for member in vars(target).values():
            member = getattr(member, "__func__", getattr(member, "fget", member))
            if inspect.isfunction(member):
                functions.append(inspect.unwrap(member))
    for function in functions:
        codes = [function.__code__]
        while codes:
            code = codes.pop()
            codes += [const for const in code.co_consts if isinstance(const, types.CodeType)]
            yield code, function.__globals__


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _imported_in(code: types.CodeType) -> Iterator[Any]:
    """What ``from module import name`` statements inside ``code`` import (a deferred import)."""
    if _IMPORT_FROM not in code.co_code[::2]:  # the opcodes (every other byte): most code imports nothing
        return
    module_name = None
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IMPORT_NAME":
            module_name = instruction.argval
        elif instruction.opname == "IMPORT_FROM" and module_name:
            module = sys.modules.get(module_name)
            if module is None:
                try:
                    module = importlib.import_module(module_name)
                except ImportError:
                    continue
            yield getattr(module, instruction.argval, None)


def process_names(target: Any, _stack: set[int] | None = None) -> frozenset[str]:
    """The names of :data:`PROCESS_NAMES` that ``target`` (a function or class) uses, itself or through
    any function or class of this project it refers to by name, transitively."""
    key = id(target)
    if key in _FOUND:
        return _FOUND[key]
    stack = set() if _stack is None else _stack
    if key in stack:
        return frozenset()
    stack.add(key)
    found: set[str] = set()
    for code, namespace in _codes(target):
        for name in code.co_names:
            if name in PROCESS_NAMES:
                found.add(name)
            referenced = namespace.get(name)
            if referenced is not None and _is_ours(referenced):
                found |= process_names(referenced, stack)
        for referenced in _imported_in(code):
            if _is_ours(referenced):
                found |= process_names(referenced, stack)
    stack.discard(key)
    _FOUND[key] = frozenset(found)
    return _FOUND[key]


def full_layer_reason(item: pytest.Item) -> str | None:
    """Why ``item`` needs the full layer, or None when it belongs to ``make check``."""
    fixtures = set(getattr(item, "fixturenames", ())) & FULL_LAYER_FIXTURES
    if fixtures:
        return f"fixture {sorted(fixtures)[0]}"
    markers = {marker.name for marker in item.iter_markers()} & FULL_LAYER_MARKERS
    if markers:
        return f"marker {sorted(markers)[0]}"
    function = getattr(item, "function", None)
    if function is not None:
        names = process_names(function)
        if names:
            return f"uses {sorted(names)[0]}"
    fixture_info = getattr(item, "_fixtureinfo", None)
    for name, definitions in fixture_info.name2fixturedefs.items() if fixture_info else ():
        for definition in definitions:
            if getattr(definition.func, "__module__", None) == __name__:
                continue  # the guard below names what it refuses
            names = process_names(definition.func)
            if names:
                return f"fixture {name} uses {sorted(names)[0]}"
    return None


def assign_layers(items: list[pytest.Item]) -> None:
    for item in items:
        reason = full_layer_reason(item)
        if reason is not None:
            item.add_marker(pytest.mark.integration(reason=reason))


def _refuse(what: str) -> NeedsFullLayer:
    return NeedsFullLayer(
        f"this test {what}, so it belongs in make test's full layer: name the fixture or function that does "
        "it in tests/layers.py (FULL_LAYER_FIXTURES or PROCESS_NAMES)"
    )


@pytest.fixture(autouse=True)
def fast_layer_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """In ``make check``: starting a process or connecting an internet socket fails the test."""
    if os.environ.get(LAYER_ENV) == "check":
        install_guard(monkeypatch)


def install_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make starting a process and connecting an internet-family socket raise :class:`NeedsFullLayer`."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def refuse_process(*_args: Any, **_kwargs: Any) -> None:
        raise _refuse("starts a process")

    def guarded(real: Any) -> Any:
        def connect(self: socket.socket, address: Any) -> Any:
            if self.family in (socket.AF_INET, socket.AF_INET6):
                raise _refuse(f"opens a connection to {address!r}")
            return real(self, address)

        return connect

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse_process)
    monkeypatch.setattr(socket.socket, "connect", guarded(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(real_connect_ex))

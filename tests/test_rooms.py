"""The rooms of the client side import one way: no module imports a room above its own.

From the bottom: ``contracts`` < ``knowledge``, ``keystore``, ``case_tracing`` < ``commerce_server``,
``activities``, ``workflows``, ``rehearsal``, ``codec_server`` < ``case_client``, ``case_eval`` <
``case_history`` < ``cli`` < ``starter``, ``worker``, ``devstack`` (and its old paths ``temporal_dev``,
``dev_ports``). Two rules on top: the command line reaches the commerce side only through the packages
``commerce_server`` and ``activities`` (their public faces, never a submodule), and nothing of the
service imports ``devstack`` but ``cli`` (the Temporal CLI's path, in the commands it prints). Every
import counts: at module level, inside a function, or for type checking only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = {
    "contracts": 0,
    **dict.fromkeys(("knowledge", "keystore", "case_tracing"), 1),
    **dict.fromkeys(("commerce_server", "activities", "workflows", "rehearsal", "codec_server"), 2),
    **dict.fromkeys(("case_client", "case_eval"), 3),
    "case_history": 4,
    "cli": 5,
    **dict.fromkeys(("starter", "worker", "devstack", "temporal_dev", "dev_ports"), 6),
}
"""Each top-level package or module of the service and its room (a higher number is a higher room)."""
UPWARD_ALLOWED = {("cli", "devstack")}
DEVSTACK_IMPORTERS = {"cli", "devstack", "temporal_dev", "dev_ports"}
PUBLIC_FACES = {"commerce_server", "activities"}


def _imports() -> Iterator[tuple[str, str, str]]:
    """``(where, importing room name, imported module)`` for every absolute import of the service."""
    paths = [ROOT / f"{name}.py" for name in ROOMS] + [path for name in ROOMS for path in (ROOT / name).rglob("*.py")]
    for path in sorted(path for path in paths if path.is_file()):
        relative = path.relative_to(ROOT)
        top = relative.parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                yield f"{relative}:{node.lineno}", top, module


def test_no_module_imports_a_room_above_its_own() -> None:
    upward = [
        f"{where}: {top} imports {module}"
        for where, top, module in _imports()
        if (target := module.split(".")[0]) in ROOMS
        and ROOMS[target] > ROOMS[top]
        and (top, target) not in UPWARD_ALLOWED
    ]
    assert upward == []


def test_only_the_command_line_and_the_dev_stack_import_the_dev_stack() -> None:
    importers = [
        f"{where}: {top} imports {module}"
        for where, top, module in _imports()
        if module.split(".")[0] == "devstack" and top not in DEVSTACK_IMPORTERS
    ]
    assert importers == []


def test_the_command_line_reaches_commerce_through_public_faces_only() -> None:
    reached = [
        f"{where}: {module}"
        for where, top, module in _imports()
        if top == "cli" and module.split(".")[0] in PUBLIC_FACES and module not in PUBLIC_FACES
    ]
    assert reached == []

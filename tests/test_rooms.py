"""The tree's shape: rooms that import one way, no circle, no big module, activity options the checker sees.

From the bottom: ``contracts`` < ``knowledge``, ``keystore``, ``case_tracing`` < ``commerce_server``,
``retail_server``, ``activities``, ``workflows``, ``rehearsal``, ``codec_server`` < ``case_client``,
``case_worker``, ``case_eval``, ``commerce_contract`` < ``case_history``, ``reviewer_console``,
``customer_channel``, ``tau2_eval`` <
``cli`` < ``starter``, ``worker``, ``devstack``; no module imports a room above its own. Two rules on
top: the command line reaches the commerce side only through the packages ``commerce_server`` and
``activities`` (their public faces, never a submodule), and nothing of the service imports ``devstack``
but ``cli`` (the Temporal CLI's path, in the commands it prints). Every import counts: at module level,
inside a function, or for type checking only. Within the rooms, no two modules import each other,
however far round (the circle is named); no module is over :data:`MAX_MODULE_LINES` lines; and every
activity call in ``workflows/`` takes its options as a typed value (a ``TypedDict`` of temporalio's
keywords), never a ``dict[str, Any]`` the checker cannot see.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = {
    "contracts": 0,
    **dict.fromkeys(("knowledge", "keystore", "case_tracing"), 1),
    **dict.fromkeys(("commerce_server", "retail_server", "activities", "workflows", "rehearsal", "codec_server"), 2),
    **dict.fromkeys(("case_client", "case_worker", "case_eval", "commerce_contract"), 3),
    **dict.fromkeys(("case_history", "reviewer_console", "customer_channel", "tau2_eval"), 4),
    "cli": 5,
    **dict.fromkeys(("starter", "worker", "devstack"), 6),
}
"""Each top-level package or module of the service and its room (a higher number is a higher room)."""
UPWARD_ALLOWED = {("cli", "devstack")}
DEVSTACK_IMPORTERS = {"cli", "devstack"}
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


def _service_modules() -> dict[str, Path]:
    """Every module of the service by its dotted name (a package by its own name, for its ``__init__``)."""
    modules: dict[str, Path] = {}
    for name in ROOMS:
        if (ROOT / f"{name}.py").is_file():
            modules[name] = ROOT / f"{name}.py"
        for path in sorted((ROOT / name).rglob("*.py")) if (ROOT / name).is_dir() else []:
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module and the service modules it imports (every import, as above): ``from a import b`` is an
    edge to ``a.b`` where that is a module, else to ``a``; a relative import is resolved first."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets.update(
                    known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in modules else known(base)
                    for alias in node.names
                )
            elif isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names)
        graph[name] = {target for target in targets if target is not None and target != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_module_imports_itself_round_a_circle() -> None:
    circles = _circles(_import_graph(_service_modules()))
    assert circles == [], "import circles: " + "; ".join(" <-> ".join(circle) for circle in circles)


def test_the_circle_finder_names_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]


MAX_MODULE_LINES = 400
"""A module longer than this holds more than one idea: split it by meaning."""


def test_no_module_of_the_service_is_over_the_line_limit() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): lines
        for path in _service_modules().values()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


EXECUTE_ACTIVITY = {"execute_activity", "start_activity", "execute_local_activity", "start_local_activity"}
UNTYPED_RETURNS = ("dict", "Dict", "Mapping", "MutableMapping", "Any")


def _called_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def test_activity_options_reach_every_activity_call_as_a_typed_value() -> None:
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted((ROOT / "workflows").rglob("*.py"))}
    returns = {
        node.name: ast.unparse(node.returns) if node.returns is not None else "Any"
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    untyped = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _called_name(node.func) in EXECUTE_ACTIVITY):
                continue
            for keyword in node.keywords:
                if keyword.arg is not None:
                    continue
                made_by = _called_name(keyword.value) if isinstance(keyword.value, ast.Call) else None
                returned = returns.get(made_by or "", "Any")
                if returned.split("[")[0].split(".")[-1] in UNTYPED_RETURNS:
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    untyped.append(f"{where}: **{ast.unparse(keyword.value)} ({returned})")
    assert untyped == []


def test_the_typed_activity_options_are_temporalio_keywords() -> None:
    from temporalio import workflow

    from workflows.activity_options import ActivityKeywords, LocalActivityKeywords

    assert ActivityKeywords.__annotations__.keys() <= workflow.ActivityConfig.__annotations__.keys()
    assert LocalActivityKeywords.__annotations__.keys() <= workflow.LocalActivityConfig.__annotations__.keys()


def _support_error_classes(trees: dict[Path, ast.Module]) -> set[str]:
    """The names of :class:`contracts.errors.SupportError` and of every class of the service derived from it."""
    names = {"SupportError"}
    while True:
        derived = {
            node.name
            for tree in trees.values()
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and any(_called_name(base) in names for base in node.bases)
        }
        if derived <= names:
            return names
        names |= derived


def test_no_error_is_raised_with_a_bare_string_code() -> None:
    """A code names a member of its room's ``StrEnum`` (``KnowledgeErrorCode.MALFORMED_DOCUMENT``), never
    a string literal: each code is defined once, and the type checker sees which codes exist."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in _service_modules().values()}
    errors = _support_error_classes(trees)
    bare = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _called_name(node.func) in errors):
                continue
            codes = [*node.args[:1], *(keyword.value for keyword in node.keywords if keyword.arg == "code")]
            if any(isinstance(code, ast.Constant) and isinstance(code.value, str) for code in codes):
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert bare == []


def test_the_bare_string_check_finds_one() -> None:
    tree = ast.parse('class Refused(AuthorizationError): ...\nraise Refused("nope", "no")\nContractError(code="x")')
    trees = {Path("example.py"): tree, Path("errors.py"): ast.parse("class AuthorizationError(SupportError): ...")}
    errors = _support_error_classes(trees)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _called_name(node.func) in errors]
    assert errors >= {"Refused", "AuthorizationError"} and len(calls) == 1

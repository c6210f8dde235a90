"""Which environment variables a process reads, and whether docs/deployment.md and docker-compose.yml
agree with that: an AST scanner over each process's project modules (followed through its imports),
the variables temporalio.envconfig reads, and the environment table of the deployment guide."""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.deploy.compose_model import ROOT, environment, services

# Each process's entry point; its code is every project module it imports, followed transitively.
WORKER_ENTRY = "worker.py"
COMMERCE_ENTRY = "commerce_server/__main__.py"

# What temporalio.envconfig reads (in the SDK's native bridge, so no Python source names them); added
# for a process whose source calls ClientConfig.load_client_connect_config. test_envconfig_reads_*
# proves each one against the installed temporalio, so the list cannot name a variable it ignores.
ENVCONFIG_VARIABLES = (
    "TEMPORAL_ADDRESS",
    "TEMPORAL_NAMESPACE",
    "TEMPORAL_API_KEY",
    "TEMPORAL_TLS",
    "TEMPORAL_TLS_CLIENT_CERT_PATH",
    "TEMPORAL_TLS_CLIENT_CERT_DATA",
    "TEMPORAL_TLS_CLIENT_KEY_PATH",
    "TEMPORAL_TLS_CLIENT_KEY_DATA",
    "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
    "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
    "TEMPORAL_TLS_SERVER_NAME",
    "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION",
    "TEMPORAL_PROFILE",
    "TEMPORAL_CONFIG_FILE",
    "TEMPORAL_GRPC_META_*",
)
ENVCONFIG_LOADERS = {"load_client_connect_config", "load_client_config"}


# --- the scanner: which environment variables a process reads -----------------------------------------

ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9*]+)+$")
ENV_HOLDERS = {"environ", "env", "environment"}


def _is_holder(node: ast.AST) -> bool:
    """``os.environ``, ``environ``, ``env``: the expressions an environment is read from."""
    if isinstance(node, ast.Name):
        return node.id in ENV_HOLDERS
    return isinstance(node, ast.Attribute) and node.attr in ENV_HOLDERS


class _Module:
    """One module's assignments of names to strings, to resolve ``environ.get(SOME_NAME)``."""

    def __init__(self, tree: ast.Module) -> None:
        self.assigned: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                self.assigned.setdefault(node.target.id, []).append(node.value)

    def names(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> set[str]:
        """The strings ``node`` can be: a literal, a name assigned a literal, an f-string (``*`` for the
        parts that cannot be resolved), or the items of a tuple or list of those."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.Name) and node.id not in seen:
            return {s for value in self.assigned.get(node.id, []) for s in self.names(value, seen | {node.id})}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return {s for item in node.elts for s in self.names(item, seen)}
        if isinstance(node, ast.JoinedStr):
            pattern = ""
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    pattern += part.value
                    continue
                resolved = self.names(part.value, seen) if isinstance(part, ast.FormattedValue) else set()
                pattern += resolved.pop() if len(resolved) == 1 else "*"
            return {pattern}
        return set()


def env_reads(source: str) -> set[str]:
    """The environment variables a module reads, as names (``*`` where a name is built at run time).

    Found: ``environ.get(X)``, ``environ[X]``, ``os.getenv(X)``, ``X in environ``, a helper given the
    environment and a name (``_get(env, X)``), module constants ``*_ENV = "NAME"`` and tuples
    ``*_VARIABLES = ("NAME", ...)``; ``X`` may be a literal, a constant or an f-string. A module that
    loads Temporal's environment configuration reads :data:`ENVCONFIG_VARIABLES`.
    """
    tree = ast.parse(source)
    module = _Module(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ENVCONFIG_LOADERS:
                found.update(ENVCONFIG_VARIABLES)
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            getter = (
                called in ("get", "pop", "setdefault") and isinstance(func, ast.Attribute) and _is_holder(func.value)
            )
            if getter or called == "getenv":
                found |= module.names(node.args[0]) if node.args else set()
            elif any(_is_holder(arg) for arg in node.args):
                for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
                    if not _is_holder(arg):
                        found |= module.names(arg)
        elif isinstance(node, ast.Subscript) and _is_holder(node.value):
            found |= module.names(node.slice)
        elif isinstance(node, ast.Compare) and any(_is_holder(c) for c in node.comparators):
            found |= module.names(node.left)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.endswith(("_ENV", "_VARIABLES", "_VARS")):
                    found |= module.names(node.value)
    return {name for name in found if ENV_NAME.match(name)}


def module_file(name: str) -> Path | None:
    """The project file of a dotted module name, or None for a module from outside the project."""
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def project_files(entry: str) -> set[Path]:
    """``entry`` and every project module it imports, at any depth and wherever the import statement is
    (a function body, ``if TYPE_CHECKING``), with the packages that contain them."""
    return set(_project_files(entry))


@functools.cache
def _parsed(file: Path) -> ast.Module:
    """A project file's syntax tree, parsed once per test process (the scans share most files)."""
    return ast.parse(file.read_text(encoding="utf-8"))


@functools.cache
def _project_files(entry: str) -> frozenset[Path]:
    seen: set[Path] = set()
    todo = [ROOT / entry]
    while todo:
        file = todo.pop()
        if file in seen:
            continue
        seen.add(file)
        relative = file.relative_to(ROOT).with_suffix("").parts
        package = list(relative[:-1])
        for node in ast.walk(_parsed(file)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                parent = package[: len(package) - node.level + 1] if node.level else []
                base = ".".join([*parent, *([node.module] if node.module else [])])
                names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for name in filter(None, names):
                parts = name.split(".")
                todo += [found for i in range(1, len(parts) + 1) if (found := module_file(".".join(parts[:i])))]
    return frozenset(seen)


def reads_of(entry: str) -> set[str]:
    return {name for file in _project_files(entry) for name in _file_reads(file)}


@functools.cache
def _file_reads(file: Path) -> frozenset[str]:
    return frozenset(env_reads(file.read_text(encoding="utf-8")))


# Names the scanner finds in a process's source that the process provably never reads, with the proof
# in test_the_commerce_server_ignores_the_workers_directory_variable.
NOT_READ = {"commerce": {"SUPPORT_DIRECTORY"}}
"""keystore declares SUPPORT_DIRECTORY as its default; the commerce server passes COMMERCE_DIRECTORY."""


def covers(read: set[str], name: str) -> bool:
    """Whether ``name`` is one of the variables ``read`` (which may hold ``*`` patterns)."""
    return name in read or any("*" in pattern and fnmatch.fnmatchcase(name, pattern) for pattern in read)


# --- the environment table in docs/deployment.md ------------------------------------------------------

TABLE = re.compile(r"<!-- env-table:start -->(.*?)<!-- env-table:end -->", re.DOTALL)
CODE = re.compile(r"`([^`]+)`")


def _service_list(cell: str) -> set[str]:
    return {word for word in re.split(r"[,\s]+", cell.strip().lower()) if word in ("worker", "commerce")}


def env_table(text: str) -> dict[str, dict[str, Any]]:
    """``{NAME: {"read_by", "compose", "default"}}`` from the marked table: variable | read by | set by
    docker-compose.yml for | when not set."""
    marked = TABLE.search(text)
    assert marked, "docs/deployment.md has no <!-- env-table:start --> ... <!-- env-table:end --> table"
    rows: dict[str, dict[str, Any]] = {}
    for line in marked.group(1).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        name = CODE.findall(cells[0])[0]
        assert name not in rows, f"{name} is in the environment table twice"
        rows[name] = {"read_by": _service_list(cells[1]), "compose": _service_list(cells[2]), "default": cells[3]}
    return rows


def env_problems(
    compose: Mapping[str, Any], table: Mapping[str, Mapping[str, Any]], reads: Mapping[str, set[str]]
) -> list[str]:
    """Every disagreement between what a process reads (``reads``), what the compose file sets for it,
    and what the documentation says. Empty when they agree."""
    problems: list[str] = []
    for service_name, read in reads.items():
        env = environment(services(compose)[service_name])
        for name in sorted(read):
            documented = [row for documented_name, row in table.items() if covers({name}, documented_name)]
            if not documented or not any(service_name in row["read_by"] for row in documented):
                problems.append(f"{service_name} reads {name}, but the environment table does not say so")
        for name, row in table.items():
            if service_name not in row["read_by"]:
                continue
            if not covers(read, name):
                problems.append(f"the table says {service_name} reads {name}, but its source does not")
            set_here = name in env
            if set_here != (service_name in row["compose"]):
                state = "sets" if set_here else "does not set"
                problems.append(f"docker-compose.yml {state} {name} for {service_name}, unlike the table")
            if not set_here and row["default"].strip() in ("", "—", "-", "required"):
                problems.append(f"{name} is not set for {service_name} and has no documented default")
        for name in sorted(env):
            if not covers(read, name):
                problems.append(f"docker-compose.yml sets {name} for {service_name}, which it never reads")
    return problems

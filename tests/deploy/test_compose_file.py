"""docker-compose.yml, the Dockerfile and .env.example, checked statically: no Docker engine is needed.

What is checked here is what a reader could get wrong without running the cluster: the start order
(depends_on conditions and health checks), the variables each process reads against what the compose
file gives it and docs/deployment.md documents (scanned from the code each process imports, not typed
here), the search
attributes the setup one-shot registers against contracts/search_attributes.py, the one secret and the
one public key set that workers and the commerce server share, pinned images, a worker that scales,
and .env.example against the variables the compose file interpolates. Whether the containers really
start is not checked here: the development machine has no Docker engine.
"""

from __future__ import annotations

import ast
import copy
import fnmatch
import posixpath
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.envconfig import ClientConfig

from commerce_server.keys import CommerceKeys
from contracts.search_attributes import ALL_KEYS, cli_type

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
ENV_EXAMPLE = ROOT / ".env.example"
DEPLOYMENT_DOC = ROOT / "docs" / "deployment.md"
README = ROOT / "README.md"

OUR_IMAGE = "qinghe-support-cases"
ONE_SHOTS = {"temporal-schema", "temporal-setup", "keys"}
LONG_RUNNING = {"postgresql", "temporal", "temporal-ui", "commerce", "worker"}
TOOLS = {"starter"}

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


# --- reading the files ------------------------------------------------------------------------------


def load_compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict), "docker-compose.yml is not a mapping"
    return data


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


def services(compose: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    found = compose.get("services")
    assert isinstance(found, dict), "docker-compose.yml has no services"
    return found


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's environment, in either of compose's forms (mapping, or a list of NAME=value)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        pairs = (item.split("=", 1) if "=" in item else (item, "") for item in env)
        return {name: value for name, value in pairs}
    return {str(name): "" if value is None else str(value) for name, value in env.items()}


def depends_on(service: Mapping[str, Any]) -> dict[str, str]:
    """``{dependency: condition}``; the short list form has no condition and is reported as such."""
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {name: "(no condition)" for name in deps}
    return {name: str((spec or {}).get("condition", "(no condition)")) for name, spec in deps.items()}


def mounts(service: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """``{target: (source, read_only)}`` of a service's volumes (short and long syntax)."""
    found: dict[str, tuple[str, bool]] = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            parts = volume.split(":")
            source, target = parts[0], parts[1]
            read_only = len(parts) > 2 and "ro" in parts[2].split(",")
        else:
            source, target, read_only = volume.get("source", ""), volume["target"], bool(volume.get("read_only"))
        found[target] = (source, read_only)
    return found


def mounted_volume(service: Mapping[str, Any], path: str) -> tuple[str, bool] | None:
    """The volume (and read-only flag) that holds ``path`` inside the service's container."""
    best: tuple[str, bool] | None = None
    best_len = -1
    for target, mount in mounts(service).items():
        if (path == target or path.startswith(target.rstrip("/") + "/")) and len(target) > best_len:
            best, best_len = mount, len(target)
    return best


# --- compose interpolation ----------------------------------------------------------------------------

INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))"
)


class MissingVariable(Exception):
    """A ``${NAME:?message}`` whose variable is not set."""


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Compose's interpolation: ``$$``, ``$NAME``, ``${NAME}``, ``${NAME:-default}``, ``${NAME-default}``,
    ``${NAME:?message}`` and ``${NAME?message}``."""

    def replace(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["plain"]
        op, arg = match["op"], match["arg"] or ""
        value = env.get(name)
        unset = not value if op in (":-", ":?") else value is None
        if unset and op in (":-", "-"):
            return arg
        if unset and op in (":?", "?"):
            raise MissingVariable(f"{name}: {arg}")
        return value or ""

    return INTERPOLATION.sub(replace, text)


def strings(node: Any) -> Iterator[str]:
    """Every string (keys and values) in a parsed YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def interpolated(compose: Any) -> dict[str, str | None]:
    """``{NAME: default}`` for every variable the compose file interpolates (default None if it has none)."""
    found: dict[str, str | None] = {}
    for text in strings(compose):
        for match in INTERPOLATION.finditer(text):
            name = match["braced"] or match["plain"]
            if name:
                default = match["arg"] if match["op"] in (":-", "-") else None
                if found.get(name) is None:
                    found[name] = default
    return found


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
    seen: set[Path] = set()
    todo = [ROOT / entry]
    while todo:
        file = todo.pop()
        if file in seen:
            continue
        seen.add(file)
        relative = file.relative_to(ROOT).with_suffix("").parts
        package = list(relative[:-1])
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
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
    return seen


def reads_of(entry: str) -> set[str]:
    return {name for file in project_files(entry) for name in env_reads(file.read_text(encoding="utf-8"))}


@pytest.fixture(scope="module")
def worker_reads() -> set[str]:
    return reads_of(WORKER_ENTRY)


# Names the scanner finds in a process's source that the process provably never reads, with the proof
# in test_the_commerce_server_ignores_the_workers_public_key_variable.
NOT_READ = {"commerce": {"SUPPORT_PUBLIC_KEYS"}}
"""keystore declares SUPPORT_PUBLIC_KEYS as its default; the commerce server passes COMMERCE_PUBLIC_KEYS."""


@pytest.fixture(scope="module")
def commerce_reads() -> set[str]:
    found = reads_of(COMMERCE_ENTRY)
    assert NOT_READ["commerce"] <= found, "NOT_READ names a variable the scanner no longer finds: drop it"
    return found - NOT_READ["commerce"]


def test_the_commerce_server_ignores_the_workers_public_key_variable(tmp_path: Path) -> None:
    keys = CommerceKeys.from_environment(tmp_path, environ={"SUPPORT_PUBLIC_KEYS": "/elsewhere/keys.json"})
    assert keys.public_keys_location == str(tmp_path / "keys" / "public-keys.json")
    keys = CommerceKeys.from_environment(tmp_path, environ={"COMMERCE_PUBLIC_KEYS": "/elsewhere/keys.json"})
    assert keys.public_keys_location == "/elsewhere/keys.json"


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


# --- the start order ---------------------------------------------------------------------------------


def test_the_compose_file_parses_and_has_every_service(compose: dict[str, Any]) -> None:
    assert set(services(compose)) == ONE_SHOTS | LONG_RUNNING | TOOLS


def test_depends_on_conditions_form_the_start_order(compose: dict[str, Any]) -> None:
    expected = {
        "temporal-schema": {"postgresql": "service_healthy"},
        "temporal": {"postgresql": "service_healthy", "temporal-schema": "service_completed_successfully"},
        "temporal-setup": {"temporal": "service_healthy"},
        "temporal-ui": {"temporal": "service_healthy"},
        "keys": {"postgresql": "service_healthy"},
        "commerce": {"postgresql": "service_healthy", "keys": "service_completed_successfully"},
        "worker": {
            "commerce": "service_healthy",
            "temporal-setup": "service_completed_successfully",
            "keys": "service_completed_successfully",
        },
        "starter": {"keys": "service_completed_successfully", "temporal-setup": "service_completed_successfully"},
        "postgresql": {},
    }
    assert {name: depends_on(service) for name, service in services(compose).items()} == expected


def start_order(compose: Mapping[str, Any]) -> list[str]:
    """A topological order of the services by depends_on; fails on a cycle or an unknown dependency."""
    graph = {name: set(depends_on(service)) for name, service in services(compose).items()}
    for name, deps in graph.items():
        assert deps <= set(graph), f"{name} depends on an unknown service: {deps - set(graph)}"
    order: list[str] = []
    while graph:
        ready = sorted(name for name, deps in graph.items() if deps <= set(order))
        assert ready, f"depends_on has a cycle among {sorted(graph)}"
        order += ready
        for name in ready:
            del graph[name]
    return order


def test_the_start_order_has_no_cycle_and_puts_setup_before_workers(compose: dict[str, Any]) -> None:
    order = start_order(compose)
    before = order.index
    assert before("postgresql") < before("temporal-schema") < before("temporal") < before("temporal-setup")
    assert before("temporal-setup") < before("worker") and before("commerce") < before("worker")
    assert before("keys") < before("commerce")


def test_a_cycle_is_found() -> None:
    looped: dict[str, Any] = {"services": {"a": {"depends_on": {"b": {}}}, "b": {"depends_on": {"a": {}}}}}
    with pytest.raises(AssertionError, match="cycle"):
        start_order(looped)


def test_conditions_point_at_services_that_can_meet_them(compose: dict[str, Any]) -> None:
    """``service_healthy`` needs a health check; ``service_completed_successfully`` needs a one-shot."""
    all_services = services(compose)
    for name, service in all_services.items():
        for dependency, condition in depends_on(service).items():
            target = all_services[dependency]
            if condition == "service_healthy":
                assert "healthcheck" in target, f"{name} waits for {dependency} to be healthy; it has no health check"
            else:
                assert condition == "service_completed_successfully", (name, dependency, condition)
                assert dependency in ONE_SHOTS, f"{name} waits for {dependency} to complete; it never does"


def test_every_long_running_service_has_a_health_check_and_restarts(compose: dict[str, Any]) -> None:
    for name in LONG_RUNNING:
        service = services(compose)[name]
        check = service.get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), f"{name} has no health check"
        assert service.get("restart") in ("unless-stopped", "always"), f"{name} is not restarted"
    for name in ONE_SHOTS:
        service = services(compose)[name]
        assert "healthcheck" not in service and service.get("restart", "no") == "no", f"{name} is a one-shot"
    for name in TOOLS:
        assert services(compose)[name].get("profiles"), f"{name} is a tool: `docker compose up` must not start it"


def test_python_health_checks_compile(compose: dict[str, Any]) -> None:
    scripts = 0
    for name, service in services(compose).items():
        test = (service.get("healthcheck") or {}).get("test") or []
        if test[1:3] == ["python", "-c"]:
            compile(test[3], f"{name} healthcheck", "exec")
            scripts += 1
    assert scripts == 2  # commerce and worker


# --- the search attributes -----------------------------------------------------------------------------

SEARCH_ATTRIBUTE = re.compile(r"temporal operator search-attribute create\b[^\n]*?--name\s+(\S+)\s+--type\s+(\S+)")


def registered_search_attributes(compose: Mapping[str, Any]) -> list[tuple[str, str]]:
    script = "\n".join(services(compose)["temporal-setup"]["command"])
    return SEARCH_ATTRIBUTE.findall(script)


def test_the_setup_one_shot_registers_exactly_the_case_search_attributes(compose: dict[str, Any]) -> None:
    registered = registered_search_attributes(compose)
    assert len(registered) == len(dict(registered)), f"registered twice: {registered}"
    assert dict(registered) == {key.name: cli_type(key) for key in ALL_KEYS}


def test_a_changed_search_attribute_is_noticed(compose: dict[str, Any]) -> None:
    changed = copy.deepcopy(compose)
    setup = services(changed)["temporal-setup"]
    script = setup["command"][0]
    setup["command"] = [script.replace("--name RefundCents --type Int", "--name RefundCents --type Keyword")]
    assert dict(registered_search_attributes(changed)) != {key.name: cli_type(key) for key in ALL_KEYS}


def test_the_setup_one_shot_creates_the_namespace_the_workers_use(compose: dict[str, Any]) -> None:
    setup = services(compose)["temporal-setup"]
    script = setup["command"][0]
    assert 'temporal operator namespace create --namespace "$$NAMESPACE"' in script
    assert "namespace describe" in script, "an existing namespace must not fail the one-shot"
    namespace = environment(setup)["NAMESPACE"]
    for name in ("worker", "starter"):
        assert environment(services(compose)[name])["TEMPORAL_NAMESPACE"] == namespace
    assert environment(services(compose)["temporal-ui"])["TEMPORAL_DEFAULT_NAMESPACE"] == namespace


# --- the environment: what each process reads, what it is given, what is documented --------------------


def test_the_scanner_finds_what_the_code_is_known_to_read(worker_reads: set[str], commerce_reads: set[str]) -> None:
    """A scanner that found nothing would make the coverage test pass vacuously; these are known reads."""
    assert {
        "COMMERCE_TOKEN_SECRET",
        "COMMERCE_MCP_URL",
        "SUPPORT_PUBLIC_KEYS",
        "SUPPORT_STATE_DIR",
        "SUPPORT_TASK_QUEUE",
        "TEMPORAL_ADDRESS",
        "TEMPORAL_API_KEY",
        "DEEPSEEK_API_KEY",
        "SUPPORT_REVIEW_MODEL",
        "SUPPORT_MODEL_MAX_TOKENS",
        "SUPPORT_MODEL_MAX_TOKENS_*",
    } <= worker_reads
    assert {
        "COMMERCE_TOKEN_SECRET",
        "COMMERCE_DATABASE_URL",
        "COMMERCE_PUBLIC_KEYS",
        "COMMERCE_SIGNING_KEY",
    } <= commerce_reads
    assert not any(name.startswith("TEMPORAL_") for name in commerce_reads), "the commerce server is not a client"


def test_each_process_is_scanned_with_every_module_it_imports() -> None:
    worker = {path.relative_to(ROOT).as_posix() for path in project_files(WORKER_ENTRY)}
    assert {
        "worker.py",
        "activities/__init__.py",
        "activities/model_settings.py",
        "activities/commerce_http.py",
        "case_client/_connection.py",
        "keystore/__init__.py",
        "commerce_server/tokens.py",
        "contracts/search_attributes.py",
        "workflows/support_case.py",
    } <= worker
    commerce = {path.relative_to(ROOT).as_posix() for path in project_files(COMMERCE_ENTRY)}
    assert {"commerce_server/__main__.py", "commerce_server/keys.py", "commerce_server/db.py"} <= commerce
    assert not any(path.startswith("workflows/") for path in commerce), "the commerce server runs no workflow"


def test_the_scanner_reads_every_form() -> None:
    source = """
import os
from os import getenv
A_ENV = "ONE_A"
NAMES_VARIABLES = ("ONE_B", "ONE_C")
prefix = "ONE_D"
def f(env, environ, kind):
    os.environ.get("ONE_E")
    os.environ["ONE_F"]
    getenv("ONE_G")
    os.getenv("ONE_H", "default")
    _get(env, "ONE_I")
    environ.get(prefix)
    _get(env, f"{prefix}_{kind.upper()}")
    return "ONE_J" in os.environ, "NOT_READ_K"
"""
    assert env_reads(source) == {
        "ONE_A", "ONE_B", "ONE_C", "ONE_D", "ONE_E", "ONE_F", "ONE_G", "ONE_H", "ONE_I", "ONE_D_*", "ONE_J",
    }  # fmt: skip


def _probe(env: dict[str, str]) -> str:
    return repr(ClientConfig.load_client_connect_config(override_env_vars=env))


def test_envconfig_reads_every_variable_listed(tmp_path: Path) -> None:
    """Each name in ENVCONFIG_VARIABLES changes what the installed temporalio.envconfig loads."""
    cert = tmp_path / "cert.pem"
    cert.write_text("CERT")
    config = tmp_path / "temporal.toml"
    config.write_text('[profile.default]\naddress = "a:1"\n[profile.other]\naddress = "b:2"\n')
    base = {"TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml")}
    values = {
        "TEMPORAL_ADDRESS": "h:1",
        "TEMPORAL_NAMESPACE": "n",
        "TEMPORAL_API_KEY": "k",
        "TEMPORAL_TLS": "true",
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(cert),
        "TEMPORAL_TLS_CLIENT_CERT_DATA": "CERT",
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(cert),
        "TEMPORAL_TLS_CLIENT_KEY_DATA": "KEY",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(cert),
        "TEMPORAL_TLS_SERVER_CA_CERT_DATA": "CA",
        "TEMPORAL_TLS_SERVER_NAME": "sni",
        "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "true",
        "TEMPORAL_GRPC_META_X_PROBE": "1",
    }
    assert set(values) | {"TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE", "TEMPORAL_GRPC_META_*"} == set(
        ENVCONFIG_VARIABLES
    ) | {"TEMPORAL_GRPC_META_X_PROBE"}
    for name, value in values.items():
        assert _probe({**base, name: value}) != _probe(base), f"temporalio.envconfig ignores {name}"
    with_file = {"TEMPORAL_CONFIG_FILE": str(config)}
    assert _probe(with_file) != _probe(base), "temporalio.envconfig ignores TEMPORAL_CONFIG_FILE"
    assert _probe({**with_file, "TEMPORAL_PROFILE": "other"}) != _probe(with_file), "it ignores TEMPORAL_PROFILE"


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, Any]]:
    return env_table(DEPLOYMENT_DOC.read_text(encoding="utf-8"))


def test_every_variable_read_is_set_by_compose_or_documented_with_its_default(
    compose: dict[str, Any], table: dict[str, dict[str, Any]], worker_reads: set[str], commerce_reads: set[str]
) -> None:
    assert env_problems(compose, table, {"worker": worker_reads, "commerce": commerce_reads}) == []


def test_a_variable_dropped_from_the_compose_file_is_reported(
    compose: dict[str, Any], table: dict[str, dict[str, Any]], worker_reads: set[str], commerce_reads: set[str]
) -> None:
    broken = copy.deepcopy(compose)
    del services(broken)["worker"]["environment"]["COMMERCE_MCP_URL"]
    services(broken)["commerce"]["environment"]["COMMERCE_TOKEN_SECRT"] = "${COMMERCE_TOKEN_SECRET}"
    problems = env_problems(broken, table, {"worker": worker_reads, "commerce": commerce_reads})
    assert any("not set COMMERCE_MCP_URL for worker" in problem for problem in problems), problems
    assert any("COMMERCE_TOKEN_SECRT for commerce, which it never reads" in p for p in problems), problems


def test_a_variable_the_table_lacks_is_reported(
    compose: dict[str, Any], table: dict[str, dict[str, Any]], worker_reads: set[str]
) -> None:
    problems = env_problems(compose, table, {"worker": worker_reads | {"SUPPORT_NEW_SETTING"}})
    assert problems == ["worker reads SUPPORT_NEW_SETTING, but the environment table does not say so"]


# --- the shared secret and the shared public key set ---------------------------------------------------

SECRET_REFERENCE = re.compile(r"^\$\{COMMERCE_TOKEN_SECRET:\?[^}]+\}$")


def test_worker_and_commerce_share_one_required_secret_from_the_env_file(compose: dict[str, Any]) -> None:
    all_services = services(compose)
    worker, commerce = environment(all_services["worker"]), environment(all_services["commerce"])
    assert worker["COMMERCE_TOKEN_SECRET"] == commerce["COMMERCE_TOKEN_SECRET"]
    assert SECRET_REFERENCE.match(worker["COMMERCE_TOKEN_SECRET"]), "required (:?), never defaulted or literal"
    with pytest.raises(MissingVariable):
        interpolate(worker["COMMERCE_TOKEN_SECRET"], {})
    holders = {name for name, service in all_services.items() if "COMMERCE_TOKEN_SECRET" in environment(service)}
    assert holders == {"worker", "commerce"}, "only the processes that mint or verify tokens get the secret"


def test_no_secret_is_written_into_the_compose_file(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        for variable, value in environment(service).items():
            if any(word in variable for word in ("SECRET", "API_KEY", "PASSWORD", "PWD")):
                assert value.startswith("${") and value.endswith("}"), f"{name}: {variable} is a literal"


def test_worker_and_commerce_read_the_same_public_key_set_and_no_private_key_reaches_the_worker(
    compose: dict[str, Any],
) -> None:
    all_services = services(compose)
    worker, commerce, keys = all_services["worker"], all_services["commerce"], all_services["keys"]
    worker_path = environment(worker)["SUPPORT_PUBLIC_KEYS"]
    assert worker_path == environment(commerce)["COMMERCE_PUBLIC_KEYS"]
    worker_volume, commerce_volume = mounted_volume(worker, worker_path), mounted_volume(commerce, worker_path)
    assert worker_volume and commerce_volume and worker_volume[0] == commerce_volume[0], "one volume for both"
    assert worker_volume[1] and commerce_volume[1], "mounted read-only"
    writes = [target for target, (source, read_only) in mounts(keys).items() if source == worker_volume[0]]
    assert writes and not mounts(keys)[writes[0]][1], "the keys one-shot writes the public key set"

    signing_key = environment(commerce)["COMMERCE_SIGNING_KEY"]
    signing_volume = mounted_volume(commerce, signing_key)
    assert signing_volume and signing_volume[1], "the commerce server reads its private key from a read-only volume"
    private = {signing_volume[0]} | ({source for source, _ in mounts(keys).values()} - {worker_volume[0]})
    worker_volumes = {source for source, _ in mounts(worker).values()}
    assert not worker_volumes & private, "the worker holds no private key"
    assert posixpath.basename(signing_key) in services(compose)["keys"]["command"][0]


def test_named_volumes_are_declared(compose: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    for name, service in services(compose).items():
        for source, _ in mounts(service).values():
            assert source in declared, f"{name} mounts {source}, which is not a declared named volume"


# --- images and scaling --------------------------------------------------------------------------------


def example_values() -> dict[str, str]:
    return {name: value for name, value in env_example().items() if value}


def env_example() -> dict[str, str]:
    """``{NAME: value}`` of .env.example, commented-out defaults (``# NAME=value``) included."""
    found: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$", line.strip())
        if match:
            found[match[1]] = match[2].strip()
    return found


def test_every_image_is_pinned_and_ours_build_from_the_dockerfile(compose: dict[str, Any]) -> None:
    for env in ({}, example_values()):
        for name, service in services(compose).items():
            image = interpolate(service.get("image", ""), env)
            assert image, f"{name} has no image"
            repository, _, tag = image.rpartition(":")
            assert repository and "/" not in tag, f"{name}: {image} has no tag"
            assert tag != "latest" and re.search(r"\d", tag), f"{name}: {image} is not pinned to a version"
            if repository == OUR_IMAGE:
                build = service.get("build") or {}
                assert build.get("context") == ".", f"{name} must build the project image"
                assert (ROOT / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE
            else:
                assert "build" not in service, f"{name} builds an image that is not ours"
    ours = {name for name, service in services(compose).items() if service["image"].startswith(OUR_IMAGE + ":")}
    assert ours == {"keys", "commerce", "worker", "starter"}


def test_the_worker_scales(compose: dict[str, Any]) -> None:
    worker = services(compose)["worker"]
    assert "container_name" not in worker and "ports" not in worker, "`--scale worker=3` needs neither"
    assert worker.get("command") == ["python", "worker.py"]
    commerce_url = environment(worker)["COMMERCE_MCP_URL"]
    assert commerce_url == "http://commerce:8765/mcp", "every replica talks to the one commerce service (one ledger)"
    assert environment(worker)["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_the_starter_tool_shares_the_workers_state_and_holds_the_demo_keys(compose: dict[str, Any]) -> None:
    """`remember` writes the preferences workers read; `ask` and `review` sign with keys under keys/."""
    all_services = services(compose)
    starter, worker, keys = all_services["starter"], all_services["worker"], all_services["keys"]
    state = environment(starter)["SUPPORT_STATE_DIR"]
    assert mounted_volume(starter, state) == mounted_volume(worker, environment(worker)["SUPPORT_STATE_DIR"])
    key_volume = mounted_volume(starter, posixpath.join(state, "keys", "issuer.pem"))
    assert key_volume is not None and key_volume[0] == mounts(keys)["/srv/support/keys"][0]
    assert "--state-dir /srv/support init" in keys["command"][0], "keys makes them under /srv/support/keys"


def test_the_commerce_server_serves_http_on_all_interfaces_with_postgresql(compose: dict[str, Any]) -> None:
    commerce = services(compose)["commerce"]
    assert commerce["command"][:3] == ["python", "-m", "commerce_server"]
    assert {"--http", "0.0.0.0", "8765"} <= set(commerce["command"])
    assert not any("postgresql" in part for part in commerce["command"]), "no password on the command line"
    assert environment(commerce)["COMMERCE_DATABASE_URL"].startswith("postgresql+psycopg://")


# --- .env.example, the Dockerfile, .gitignore, the documentation ---------------------------------------


def test_env_example_names_every_variable_the_compose_file_interpolates(compose: dict[str, Any]) -> None:
    example = env_example()
    used = interpolated(compose)
    assert set(example) == set(used), (
        f"missing from .env.example: {sorted(set(used) - set(example))}; "
        f"not used by docker-compose.yml: {sorted(set(example) - set(used))}"
    )
    for name, default in used.items():
        if example[name] and default is not None:
            assert example[name] == default, f".env.example has {name}={example[name]}; the compose default: {default}"


def test_env_example_leaves_the_secret_to_the_user() -> None:
    text = ENV_EXAMPLE.read_text(encoding="utf-8")
    assert env_example()["COMMERCE_TOKEN_SECRET"] == ""
    assert "secrets.token_urlsafe(32)" in text


def test_interpolation_follows_compose() -> None:
    assert interpolate("${A:-x}-${B-y}-$${C}-$$D-${E}", {"A": "", "B": "", "E": "e"}) == "x--${C}-$D-e"
    with pytest.raises(MissingVariable, match="S: set it"):
        interpolate("${S:?set it}", {"S": ""})
    assert interpolated({"k": ["${A:-1}", "$${B}", "$C"]}) == {"A": "1", "C": None}


def test_the_dockerfile_pins_its_base_and_runs_as_a_user() -> None:
    lines = [line.strip() for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()]
    bases = [line.split()[1] for line in lines if line.upper().startswith("FROM ")]
    assert bases and all(re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?", base) for base in bases), bases
    users = [line.split()[1] for line in lines if line.upper().startswith("USER ")]
    assert users and users[-1] not in ("root", "0"), "the image must run as a non-root user"
    assert any(line.startswith("RUN pip install .") for line in lines)
    for line in lines:
        if line.upper().startswith(("ENV ", "ARG ")):
            assert not re.search(r"SECRET|TOKEN|PASSWORD|API_KEY", line), f"a secret in the image: {line}"
    ignored = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    assert {".env", ".git", ".venv", ".state", "tests"} <= set(ignored)


def test_the_env_file_is_never_committed() -> None:
    assert ".env" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_readme_points_to_the_deployment_guide() -> None:
    readme = README.read_text(encoding="utf-8")
    assert "## Run it as a cluster" in readme
    assert "docs/deployment.md" in readme
    assert "docker compose up --scale worker=3" in readme

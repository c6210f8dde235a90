"""docker-compose.yml and .env.example as data: loading, compose's interpolation, and the parts of a
service the deploy tests look at (environment, depends_on, mounts, start order, the setup one-shot's
search attributes, the argv compose gives a one-shot). No Docker engine is needed."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
ENV_EXAMPLE = ROOT / ".env.example"
DEPLOYMENT_DOC = ROOT / "docs" / "deployment.md"
README = ROOT / "README.md"

OUR_IMAGE = "qinghe-support-cases"
ONE_SHOTS = {"temporal-schema", "temporal-setup", "keys"}
LONG_RUNNING = {
    "postgresql",
    "temporal",
    "temporal-ui",
    "codec",
    "commerce",
    "worker",
    "worker-draining",
    "console",
    "chat",
    "prometheus",
    "grafana",
}
TOOLS = {"starter"}
WORKERS = {"worker", "worker-draining"}
"""The current build's workers and the previous release's, draining (profile ``drain``)."""


# --- reading the files ------------------------------------------------------------------------------


def load_compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict), "docker-compose.yml is not a mapping"
    return data


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


# --- the start order, the search attributes, a one-shot's command -------------------------------------


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


SEARCH_ATTRIBUTE = re.compile(r"temporal operator search-attribute create\b[^\n]*?--name\s+(\S+)\s+--type\s+(\S+)")


def registered_search_attributes(compose: Mapping[str, Any]) -> list[tuple[str, str]]:
    script = "\n".join(services(compose)["temporal-setup"]["command"])
    return SEARCH_ATTRIBUTE.findall(script)


def shell_command(service: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """The argv compose runs for ``service``: its entrypoint followed by its command, each string
    interpolated with ``env`` (so ``$$`` becomes ``$`` for the shell)."""
    entrypoint, command = service.get("entrypoint") or [], service.get("command") or []
    parts = [entrypoint] if isinstance(entrypoint, str) else list(entrypoint)
    parts += [command] if isinstance(command, str) else list(command)
    return [interpolate(str(part), env) for part in parts]


def interpolated_environment(service: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """A service's environment as its process gets it: every value interpolated with ``env``."""
    return {name: interpolate(value, env) for name, value in environment(service).items()}


# --- .env.example -------------------------------------------------------------------------------------


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


# --- compose's units ----------------------------------------------------------------------------------

DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|m|s)")
DURATION_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 0.000001}


def duration_seconds(text: str) -> float:
    """A compose duration (Go's syntax: ``30s``, ``1m30s``, ``1.5h``) in seconds."""
    parts = DURATION_PART.findall(text)
    assert parts and "".join(number + unit for number, unit in parts) == text, f"not a duration: {text!r}"
    return sum(float(number) * DURATION_SECONDS[unit] for number, unit in parts)


BYTE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}


def byte_count(value: str | int) -> int:
    """A compose byte value (``512m``, ``1g``, ``1073741824``) in bytes."""
    found = re.fullmatch(r"(\d+)([a-z]*)", str(value).strip().lower())
    assert found and found[2] in BYTE_UNITS, f"not a byte value: {value!r}"
    return int(found[1]) * BYTE_UNITS[found[2]]


# --- the Dockerfile ---------------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """``[(INSTRUCTION, arguments)]`` of the Dockerfile, continuation lines joined, comments dropped."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        pending += " " + stripped.removesuffix("\\").strip()
        if stripped.endswith("\\"):
            continue
        instruction, _, arguments = pending.strip().partition(" ")
        found.append((instruction.upper(), arguments.strip()))
        pending = ""
    return found

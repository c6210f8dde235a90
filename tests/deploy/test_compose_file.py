"""docker-compose.yml, the Dockerfile and .env.example, checked statically: no Docker engine is needed.

What is checked here is what a reader could get wrong without running the cluster: the start order
(depends_on conditions and health checks), the search attributes the setup one-shot registers against
contracts/search_attributes.py, the one secret and the one directory that workers and the
commerce server share, named volumes, pinned images, a worker that scales, and .env.example against
the variables the compose file interpolates. The variables each process reads are checked in
test_compose_environment.py; the setup one-shot's script runs against a real dev server in
test_compose_scripts.py. Whether the containers really start is not checked here: the development
machine has no Docker engine.
"""

from __future__ import annotations

import copy
import posixpath
import re
from typing import Any

import pytest

from contracts.search_attributes import ALL_KEYS, cli_type
from tests.deploy.compose_model import (
    DOCKERFILE,
    DOCKERIGNORE,
    ENV_EXAMPLE,
    LONG_RUNNING,
    ONE_SHOTS,
    OUR_IMAGE,
    README,
    ROOT,
    TOOLS,
    MissingVariable,
    depends_on,
    env_example,
    environment,
    example_values,
    interpolate,
    interpolated,
    mounted_volume,
    mounts,
    registered_search_attributes,
    services,
    start_order,
)

# --- the start order ---------------------------------------------------------------------------------


def test_the_compose_file_parses_and_has_every_service(compose: dict[str, Any]) -> None:
    assert set(services(compose)) == ONE_SHOTS | LONG_RUNNING | TOOLS


def test_depends_on_conditions_form_the_start_order(compose: dict[str, Any]) -> None:
    expected = {
        "temporal-schema": {"postgresql": "service_healthy"},
        "temporal": {"postgresql": "service_healthy", "temporal-schema": "service_completed_successfully"},
        "temporal-setup": {"temporal": "service_healthy"},
        "temporal-ui": {"temporal": "service_healthy"},
        "codec": {},
        "keys": {"postgresql": "service_healthy"},
        "commerce": {"postgresql": "service_healthy", "keys": "service_completed_successfully"},
        "worker": {
            "commerce": "service_healthy",
            "temporal-setup": "service_completed_successfully",
            "keys": "service_completed_successfully",
        },
        "worker-draining": {
            "commerce": "service_healthy",
            "temporal-setup": "service_completed_successfully",
            "keys": "service_completed_successfully",
        },
        "starter": {"keys": "service_completed_successfully", "temporal-setup": "service_completed_successfully"},
        "console": {"keys": "service_completed_successfully", "temporal-setup": "service_completed_successfully"},
        "chat": {"keys": "service_completed_successfully", "temporal-setup": "service_completed_successfully"},
        "postgresql": {},
        "prometheus": {},
        "grafana": {"prometheus": "service_healthy"},
    }
    assert {name: depends_on(service) for name, service in services(compose).items()} == expected


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
    assert scripts == 6  # codec, commerce, worker, worker-draining, console and chat


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


# --- the shared secret and the shared directory -------------------------------------------------------

SECRET_REFERENCE = re.compile(r"^\$\{COMMERCE_TOKEN_SECRET:\?[^}]+\}$")


def test_worker_and_commerce_share_one_required_secret_from_the_env_file(compose: dict[str, Any]) -> None:
    all_services = services(compose)
    worker, commerce = environment(all_services["worker"]), environment(all_services["commerce"])
    assert worker["COMMERCE_TOKEN_SECRET"] == commerce["COMMERCE_TOKEN_SECRET"]
    assert SECRET_REFERENCE.match(worker["COMMERCE_TOKEN_SECRET"]), "required (:?), never defaulted or literal"
    with pytest.raises(MissingVariable):
        interpolate(worker["COMMERCE_TOKEN_SECRET"], {})
    holders = {name for name, service in all_services.items() if "COMMERCE_TOKEN_SECRET" in environment(service)}
    assert holders == {"worker", "worker-draining", "commerce"}, "only the processes that mint or verify tokens"
    assert environment(all_services["worker-draining"])["COMMERCE_TOKEN_SECRET"] == worker["COMMERCE_TOKEN_SECRET"]


def test_no_secret_is_written_into_the_compose_file(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        for variable, value in environment(service).items():
            if any(word in variable for word in ("SECRET", "API_KEY", "PASSWORD", "PWD")):
                assert value.startswith("${") and value.endswith("}"), f"{name}: {variable} is a literal"


def test_worker_and_commerce_read_the_same_directory_and_no_private_key_reaches_the_worker(
    compose: dict[str, Any],
) -> None:
    all_services = services(compose)
    worker, commerce, keys = all_services["worker"], all_services["commerce"], all_services["keys"]
    worker_path = environment(worker)["SUPPORT_DIRECTORY"]
    assert worker_path == environment(commerce)["COMMERCE_DIRECTORY"]
    worker_volume, commerce_volume = mounted_volume(worker, worker_path), mounted_volume(commerce, worker_path)
    assert worker_volume and commerce_volume and worker_volume[0] == commerce_volume[0], "one volume for both"
    assert worker_volume[1] and commerce_volume[1], "mounted read-only"
    writes = [target for target, (source, read_only) in mounts(keys).items() if source == worker_volume[0]]
    assert writes and not mounts(keys)[writes[0]][1], "the keys one-shot writes the directory"

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


def test_every_image_is_pinned_and_ours_build_from_the_dockerfile(compose: dict[str, Any]) -> None:
    for env in ({}, example_values()):
        for name, service in services(compose).items():
            image = interpolate(service.get("image", ""), env)
            assert image, f"{name} has no image"
            repository, _, tag = image.rpartition(":")
            assert repository and "/" not in tag, f"{name}: {image} has no tag"
            if name == "worker-draining":  # the previous release's image, named in .env for a release
                assert "build" not in service and service.get("pull_policy") == "never", f"{name} runs a local image"
                continue
            assert tag != "latest" and re.search(r"\d", tag), f"{name}: {image} is not pinned to a version"
            if repository == OUR_IMAGE:
                build = service.get("build") or {}
                assert build.get("context") == ".", f"{name} must build the project image"
                assert (ROOT / build.get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE
            else:
                assert "build" not in service, f"{name} builds an image that is not ours"
    ours = {name for name, service in services(compose).items() if service["image"].startswith(OUR_IMAGE + ":")}
    assert ours == {"keys", "codec", "commerce", "worker", "worker-draining", "starter", "console", "chat"}


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

"""The environment of the worker and the commerce server, checked statically: every variable each
process reads (scanned from the code it imports, not typed here) is set by docker-compose.yml or
documented with its default in docs/deployment.md, nothing is set that no process reads, and the
scanner itself is checked against known reads, every form it claims to find, and the installed
temporalio.envconfig."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from temporalio.envconfig import ClientConfig

from commerce_server.keys import CommerceKeys
from tests.deploy.compose_model import ROOT, services
from tests.deploy.env_reads import (
    COMMERCE_ENTRY,
    ENVCONFIG_VARIABLES,
    WORKER_ENTRY,
    env_problems,
    env_reads,
    project_files,
)


def test_the_commerce_server_ignores_the_workers_directory_variable(tmp_path: Path) -> None:
    keys = CommerceKeys.from_environment(tmp_path, environ={"SUPPORT_DIRECTORY": "/elsewhere/directory.json"})
    assert keys.directory_location == str(tmp_path / "keys" / "directory.json")
    keys = CommerceKeys.from_environment(tmp_path, environ={"COMMERCE_DIRECTORY": "/elsewhere/directory.json"})
    assert keys.directory_location == "/elsewhere/directory.json"


def test_the_scanner_finds_what_the_code_is_known_to_read(worker_reads: set[str], commerce_reads: set[str]) -> None:
    """A scanner that found nothing would make the coverage test pass vacuously; these are known reads."""
    assert {
        "COMMERCE_TOKEN_SECRET",
        "COMMERCE_MCP_URL",
        "SUPPORT_DIRECTORY",
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
        "COMMERCE_DIRECTORY",
        "COMMERCE_SIGNING_KEY",
    } <= commerce_reads
    assert not any(name.startswith("TEMPORAL_") for name in commerce_reads), "the commerce server is not a client"


def test_each_process_is_scanned_with_every_module_it_imports() -> None:
    worker = {path.relative_to(ROOT).as_posix() for path in project_files(WORKER_ENTRY)}
    assert {
        "worker.py",
        "activities/__init__.py",
        "activities/model/model_settings.py",
        "activities/commerce/commerce_http.py",
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

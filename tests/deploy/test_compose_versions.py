"""docker-compose.yml against the dev server and the threats: the images are the server and Web UI
that the pip-installed Temporal CLI runs, the server's dynamic config sets the flood limits
docs/faults.md recommends, and no state dir, key or database reaches the image's build context."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

from devstack.temporal_cli import temporal_cli
from tests.deploy.compose_model import DOCKERIGNORE, ENV_EXAMPLE, ROOT, interpolate, services

DEPLOYMENT = ROOT / "docs" / "deployment.md"
FAULTS = ROOT / "docs" / "faults.md"


def _cli_versions() -> tuple[str, str]:
    """(server, UI) versions of the dev server that `temporal --version` names."""
    printed = subprocess.run([temporal_cli(), "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"Server (\d+\.\d+\.\d+), UI (\d+\.\d+\.\d+)", printed)
    assert found, printed
    return found[1], found[2]


def _image_tag(compose: dict[str, Any], service: str) -> tuple[str, str]:
    repository, _, tag = interpolate(services(compose)[service]["image"], {}).rpartition(":")
    return repository, tag


def test_the_cluster_runs_the_server_and_web_ui_of_the_dev_server(compose: dict[str, Any]) -> None:
    server, ui = _cli_versions()
    assert _image_tag(compose, "temporal") == ("temporalio/server", server)
    assert _image_tag(compose, "temporal-schema") == ("temporalio/admin-tools", server)
    assert _image_tag(compose, "temporal-setup") == ("temporalio/admin-tools", server)
    assert _image_tag(compose, "temporal-ui") == ("temporalio/ui", ui)
    example = ENV_EXAMPLE.read_text(encoding="utf-8")
    assert f"# TEMPORAL_VERSION={server}" in example and f"# TEMPORAL_ADMINTOOLS_VERSION={server}" in example
    assert f"# TEMPORAL_UI_VERSION={ui}" in example
    guide = DEPLOYMENT.read_text(encoding="utf-8")
    assert f"`temporalio/server:{server}`" in guide and f"`temporalio/ui:{ui}`" in guide
    pinned = re.escape(server) + "|" + re.escape(ui)
    assert not re.search(r"temporalio/(server|admin-tools|ui):(?!" + pinned + ")", guide)


def _dynamic_config(compose: dict[str, Any]) -> dict[str, Any]:
    return yaml.safe_load(compose["configs"]["temporal-dynamic-config"]["content"])


@pytest.mark.parametrize(
    ("key", "most"),
    [
        ("limit.blobSize.error", 256 * 1024),
        ("history.maximumSignalsPerExecution", 1000),
        ("frontend.namespaceRPS", 1000),
    ],
)
def test_the_server_sets_the_flood_limits(compose: dict[str, Any], key: str, most: int) -> None:
    [setting] = _dynamic_config(compose)[key]
    assert setting["constraints"] == {}  # for every namespace
    assert 0 < setting["value"] <= most
    assert f"`{key}`" in FAULTS.read_text(encoding="utf-8")


def test_a_blob_warning_comes_before_the_error(compose: dict[str, Any]) -> None:
    config = _dynamic_config(compose)
    assert config["limit.blobSize.warn"][0]["value"] < config["limit.blobSize.error"][0]["value"]


def _docker_pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore line as Docker matches it: ``**`` any number of directories, ``*`` and ``?``
    within one path segment; a match on a directory excludes what it holds."""
    text = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            text, index = text + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            text, index = text + ".*", index + 2
        elif pattern[index] == "*":
            text, index = text + "[^/]*", index + 1
        elif pattern[index] == "?":
            text, index = text + "[^/]", index + 1
        else:
            text, index = text + re.escape(pattern[index]), index + 1
    return re.compile(text + "(?:/.*)?")


def _ignored(path: str) -> bool:
    lines = [line.strip() for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()]
    verdict = False
    for line in lines:
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if _docker_pattern(line.removeprefix("!").strip("/")).fullmatch(path):
            verdict = not negated
    return verdict


@pytest.mark.parametrize(
    "path",
    [
        ".state/demo/keys/reviewer-chen.pem",
        "my-state/keys/reviewer-chen.pem",
        "my-state/commerce.pem",
        "state/commerce.db",
        "state/commerce.db-wal",
        "state/temporal.db",
        "elsewhere/cases.sqlite3",
        "elsewhere/worker.log",
        "deploy/tls/client.key",
        ".env.production",
    ],
)
def test_no_key_database_or_state_reaches_the_build_context(path: str) -> None:
    assert _ignored(path)


@pytest.mark.parametrize(
    "path",
    [
        "contracts/case.py",
        "commerce_server/fixtures/commerce.json",
        "knowledge/documents/RETURNS.md",
        "knowledge/refund_rules.json",
        "keystore/signers.py",
        "pyproject.toml",
        "worker.py",
    ],
)
def test_what_the_image_runs_is_in_the_build_context(path: str) -> None:
    assert (ROOT / path).exists()
    assert not _ignored(path)

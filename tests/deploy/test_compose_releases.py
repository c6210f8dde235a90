"""A release under docker compose, checked statically: the image's tag is the package version, every
image names its own build (the package version and a build argument, baked into the image, no git
needed), and the previous release's workers can run beside the new ones while their pinned cases drain
(``worker-draining``, profile ``drain``), as docs/upgrades.md describes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from case_client.deployment import BUILD_ID_ENV, IMAGE_BUILD_ENV, release
from contracts.errors import ConfigurationError
from tests.deploy.compose_model import (
    DEPLOYMENT_DOC,
    OUR_IMAGE,
    README,
    ROOT,
    dockerfile_instructions,
    environment,
    interpolate,
    services,
)

UPGRADES_DOC = ROOT / "docs" / "upgrades.md"


def package_version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as file:
        version: str = tomllib.load(file)["project"]["version"]
    return version


# --- image tags --------------------------------------------------------------------------------------


def test_the_image_tag_is_the_package_version(compose: dict[str, Any]) -> None:
    version = package_version()
    for name, service in services(compose).items():
        if service["image"].startswith(OUR_IMAGE + ":") and name != "worker-draining":
            assert interpolate(service["image"], {}) == f"{OUR_IMAGE}:{version}", (
                f"{name}: bump the tag with the version"
            )
    for guide in (DEPLOYMENT_DOC, README):  # docs/upgrades.md names example releases
        for tag in re.findall(re.escape(OUR_IMAGE) + r":(\d+\.\d+\.\d+)\b", guide.read_text(encoding="utf-8")):
            assert tag == version, f"{guide.name} names {OUR_IMAGE}:{tag}; the package is {version}"


# --- build ids ---------------------------------------------------------------------------------------


def test_the_image_bakes_its_build_label_from_a_build_argument(compose: dict[str, Any]) -> None:
    instructions = dockerfile_instructions()
    assert ("ARG", f"{IMAGE_BUILD_ENV}=local") in instructions
    assert ("ENV", f"{IMAGE_BUILD_ENV}=${{{IMAGE_BUILD_ENV}}}") in instructions
    args = services(compose)["worker"]["build"]["args"]
    assert args == {IMAGE_BUILD_ENV: f"${{{IMAGE_BUILD_ENV}:-local}}"}, "compose passes the label from .env"
    assert ".git" in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines(), "no git in the image"


def _tree(tmp_path: Path, version: str) -> Path:
    """A project tree without git, as the image has it: only its pyproject.toml matters here."""
    root = tmp_path / version
    root.mkdir()
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "{version}"\n', encoding="utf-8")
    return root


def test_each_image_and_each_release_runs_as_its_own_build(tmp_path: Path) -> None:
    """What the worker in an image names its build: the package version and the image's label."""
    v8, v9 = _tree(tmp_path, "0.8.0"), _tree(tmp_path, "0.9.0")
    build_41 = release({IMAGE_BUILD_ENV: "41"}, v8)
    assert build_41.build_id == "0.8.0+build.41" and IMAGE_BUILD_ENV in build_41.source
    ids = {
        build_41.build_id,
        release({IMAGE_BUILD_ENV: "42"}, v8).build_id,  # another image of the release
        release({IMAGE_BUILD_ENV: "41"}, v9).build_id,  # another release, the same label
        release({IMAGE_BUILD_ENV: "local"}, v8).build_id,
    }
    assert len(ids) == 4, ids
    given = release({IMAGE_BUILD_ENV: "41", BUILD_ID_ENV: "0.8.0-hotfix"}, v8)
    assert given.build_id == "0.8.0-hotfix", "SUPPORT_BUILD_ID still names the build outright"
    assert release({IMAGE_BUILD_ENV: " ", BUILD_ID_ENV: ""}, v8).build_id == "0.8.0", "empty counts as unset"


@pytest.mark.parametrize("label", ["4 2", "a+b", "-x", "x" * 65, "ü"])
def test_a_build_label_temporal_would_refuse_is_refused_at_start(tmp_path: Path, label: str) -> None:
    with pytest.raises(ConfigurationError, match=IMAGE_BUILD_ENV):
        release({IMAGE_BUILD_ENV: label}, _tree(tmp_path, "0.8.0"))


# --- the draining workers ------------------------------------------------------------------------------

DEPLOYMENT_SETTINGS = {"SUPPORT_BUILD_ID", "SUPPORT_SET_CURRENT_VERSION"}


def test_the_draining_workers_are_the_workers_of_another_image(compose: dict[str, Any]) -> None:
    """Everything but the image and the Worker Deployment settings is the current workers'."""
    worker, draining = services(compose)["worker"], services(compose)["worker-draining"]
    for key in ("command", "depends_on", "volumes", "expose", "healthcheck", "stop_grace_period", "deploy", "logging"):
        assert draining.get(key) == worker.get(key), f"worker-draining differs from worker in {key}"
    current_env, draining_env = environment(worker), environment(draining)
    assert {k: v for k, v in draining_env.items() if k not in DEPLOYMENT_SETTINGS} == {
        k: v for k, v in current_env.items() if k not in DEPLOYMENT_SETTINGS
    }
    assert set(draining_env) >= DEPLOYMENT_SETTINGS and set(current_env) >= DEPLOYMENT_SETTINGS


def test_the_draining_workers_run_the_previous_image_and_never_take_new_cases(compose: dict[str, Any]) -> None:
    draining = services(compose)["worker-draining"]
    assert draining["profiles"] == ["drain"], "`docker compose up` must not start it"
    assert draining["image"].startswith(OUR_IMAGE + ":${SUPPORT_DRAINING_IMAGE_TAG:-")
    unset_tag = interpolate(draining["image"], {})
    assert "SUPPORT_DRAINING_IMAGE_TAG" in unset_tag, "unset, the missing image names the setting"
    assert interpolate(draining["image"], {"SUPPORT_DRAINING_IMAGE_TAG": "0.7.0"}) == f"{OUR_IMAGE}:0.7.0"
    assert "build" not in draining and draining["pull_policy"] == "never"
    env = environment(draining)
    assert env["SUPPORT_SET_CURRENT_VERSION"] == "0", "a draining build never becomes current"
    assert env["SUPPORT_BUILD_ID"] == "${SUPPORT_DRAINING_BUILD_ID:-}", "empty: the old image's own build id"
    assert environment(services(compose)["worker"])["SUPPORT_BUILD_ID"] == "${SUPPORT_BUILD_ID:-}"
    assert "worker" in draining["networks"]["default"]["aliases"], "Prometheus scrapes it as a worker"


def test_the_release_procedure_names_the_services_and_commands() -> None:
    guide = UPGRADES_DOC.read_text(encoding="utf-8")
    section = guide[guide.index("## Releasing with docker compose") :]
    section = section[: section.find("\n## ", 3)]
    for needed in (
        "worker-draining",
        "SUPPORT_DRAINING_IMAGE_TAG",
        "SUPPORT_IMAGE_BUILD",
        "docker compose --profile drain up -d --no-deps worker-draining",
        "docker compose --profile drain stop worker-draining",
        "set-current-version",
        "delete-version",
        "stop_grace_period",
    ):
        assert needed in section, f"docs/upgrades.md's compose release does not name {needed}"

"""The worker deployment version: how the build id is named, and a case pinned to the build it started on."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import VersioningBehavior
from temporalio.client import Client

from case_client.deployment import (
    BUILD_ID_ENV,
    current_build_id,
    git_commit,
    open_cases_on,
    package_version,
    release,
)
from contracts.case import CaseStatus
from contracts.errors import ConfigurationError
from contracts.names import DEPLOYMENT_NAME
from tests.case_world import open_world
from tests.faults.fault_support import REFUND_QUESTION

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_the_build_id_is_the_package_version_and_the_commit() -> None:
    head = subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    ours = release({}, PROJECT_ROOT)
    assert ours.version.deployment_name == DEPLOYMENT_NAME
    assert ours.build_id == f"{package_version(PROJECT_ROOT)}-{head.stdout.strip()[:12]}"
    assert DEPLOYMENT_NAME in ours.describe() and ours.build_id in ours.describe()


def test_a_tree_without_git_is_named_by_its_version_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    assert git_commit(tmp_path) is None
    ours = release({}, tmp_path)
    assert ours.build_id == "9.8.7" and BUILD_ID_ENV in ours.source


def test_the_environment_names_the_build_and_a_bad_name_is_refused(tmp_path: Path) -> None:
    assert release({BUILD_ID_ENV: "0.2.0-abc"}, tmp_path).build_id == "0.2.0-abc"
    with pytest.raises(ConfigurationError, match=BUILD_ID_ENV):
        release({BUILD_ID_ENV: "0.2 with spaces"}, tmp_path)
    with pytest.raises(ConfigurationError, match="package version"):
        release({}, tmp_path)  # no pyproject.toml and no build id


async def test_a_case_is_pinned_to_the_build_its_worker_made_current(temporal_client: Client, tmp_path: Path) -> None:
    world, worker, cleanup = await open_world(temporal_client, tmp_path / "state")
    ours = release()
    try:
        async with worker:
            assert await current_build_id(temporal_client) == ours.build_id
            handle = await world.start(REFUND_QUESTION)
            view = await world.settled(handle)
            assert view.status is CaseStatus.WAITING_APPROVAL
            described = await handle.describe()
            versioning = described.raw_description.workflow_execution_info.versioning_info
            assert versioning.behavior == VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
            assert (versioning.deployment_version.deployment_name, versioning.deployment_version.build_id) == (
                DEPLOYMENT_NAME,
                ours.build_id,
            )
            for _ in range(50):  # visibility is eventually consistent
                if handle.id in await open_cases_on(temporal_client, ours.version):
                    break
                await asyncio.sleep(0.2)
            assert handle.id in await open_cases_on(temporal_client, ours.version)
            await handle.terminate("test over")
    finally:
        await cleanup()
        world.engine.dispose()

"""The worker deployment the case workers run as: its version, making a version current, and its drain.

Every worker of this product runs as one version of the Worker Deployment :data:`DEPLOYMENT_NAME`,
and the case workflow is PINNED: a case runs its whole life on the version it started on, and new
cases start on the deployment's current version (docs/upgrades.md is the release procedure). The
build id names the code: ``SUPPORT_BUILD_ID`` where the environment sets it; in the project image,
the package version and the image's build label (``0.8.0+build.42``: the Dockerfile bakes its
``SUPPORT_IMAGE_BUILD`` build argument into the image, which has no git history); elsewhere the
package version and the git commit (``0.2.0-3f2a1b9c0d1e``). Everything here talks to Temporal's
deployment API through the client's workflow service, as the ``temporal worker deployment`` commands do.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from case_client._busy_server import START_BACKOFF, Backoff, ask_until_served
from case_client._codes import ClientErrorCode
from contracts.errors import ConfigurationError, TransientError
from contracts.names import DEPLOYMENT_NAME, WORKFLOW_NAME

BUILD_ID_ENV = "SUPPORT_BUILD_ID"
IMAGE_BUILD_ENV = "SUPPORT_IMAGE_BUILD"
"""The build label an image was built with (the Dockerfile's build argument, kept as ENV): a CI build
number or any label that differs between two images of one package version."""
PROJECT_ROOT = Path(__file__).resolve().parent.parent
_BUILD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")
_IMAGE_BUILD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SET_CURRENT_WAIT_SECONDS = 30.0
"""How long :func:`make_current` waits for the server to see this version's pollers."""


@dataclass(frozen=True)
class Release:
    """The version a worker runs as, and where its build id came from (printed at start)."""

    version: WorkerDeploymentVersion
    source: str

    @property
    def build_id(self) -> str:
        return self.version.build_id

    def describe(self) -> str:
        return f"deployment {self.version.deployment_name!r} build {self.build_id!r} ({self.source}); cases pinned"


def package_version(root: Path = PROJECT_ROOT) -> str:
    """The version in the project's pyproject.toml (the tree the worker runs from, not the install)."""
    try:
        with (root / "pyproject.toml").open("rb") as file:
            version: str = tomllib.load(file)["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise ConfigurationError(
            ClientErrorCode.BUILD_ID,
            f"cannot read the package version from {root / 'pyproject.toml'} ({error}); set {BUILD_ID_ENV}",
        ) from None
    return version


def git_commit(root: Path = PROJECT_ROOT) -> str | None:
    """The commit the tree at ``root`` is checked out at, or None without git or a repository there."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    if done.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None
    if not (root / ".git").exists():
        return None
    return commit


def release(environ: Mapping[str, str] = os.environ, root: Path = PROJECT_ROOT) -> Release:
    """This worker's deployment version: ``SUPPORT_BUILD_ID`` if set; else the package version with the
    image's build label (``SUPPORT_IMAGE_BUILD``, set in the project image) as ``<version>+build.<label>``;
    else version and git commit; else the version alone.

    Raises :class:`ConfigurationError` for a build id or label Temporal would refuse, or one with no version.
    """
    given = (environ.get(BUILD_ID_ENV) or "").strip()
    if given:
        if not _BUILD_ID.fullmatch(given):
            raise ConfigurationError(
                ClientErrorCode.BUILD_ID,
                f"{BUILD_ID_ENV}={given[:40]!r} is not a build id: letters, digits and . _ + - only",
            )
        return Release(WorkerDeploymentVersion(DEPLOYMENT_NAME, given), f"from {BUILD_ID_ENV}")
    version = package_version(root)
    label = (environ.get(IMAGE_BUILD_ENV) or "").strip()
    if label:
        if not _IMAGE_BUILD.fullmatch(label):
            raise ConfigurationError(
                ClientErrorCode.BUILD_ID,
                f"{IMAGE_BUILD_ENV}={label[:40]!r} is not a build label: letters, digits and . _ - only, "
                "at most 64 characters",
            )
        return Release(
            WorkerDeploymentVersion(DEPLOYMENT_NAME, f"{version}+build.{label}"),
            f"package version and image build {IMAGE_BUILD_ENV}",
        )
    commit = git_commit(root)
    if commit is None:
        return Release(
            WorkerDeploymentVersion(DEPLOYMENT_NAME, version),
            f"package version; no git commit found, set {BUILD_ID_ENV} to name the build",
        )
    return Release(WorkerDeploymentVersion(DEPLOYMENT_NAME, f"{version}-{commit[:12]}"), "package version and commit")


def deployment_config(version: WorkerDeploymentVersion) -> WorkerDeploymentConfig:
    """The worker's deployment options: versioned, every workflow it runs (the case workflow) PINNED.

    The behaviour is the worker's default rather than the workflow definition's: a definition that
    names one cannot run on an unversioned worker at all (the server refuses its task completions),
    and the fast tests run the workflow on unversioned workers of their own task queues."""
    return WorkerDeploymentConfig(
        version=version, use_worker_versioning=True, default_versioning_behavior=VersioningBehavior.PINNED
    )


async def current_build_id(
    client: Client, deployment_name: str = DEPLOYMENT_NAME, *, backoff: Backoff = START_BACKOFF
) -> str | None:
    """The build id of the deployment's current version; None when none is current or the deployment is new.

    A describe the server cancels, cannot serve just now or asks to try again later (``RESOURCE_EXHAUSTED:
    too many requests issued to Worker Deployment ...``, when several workers start at once) is asked
    again with ``backoff`` (:func:`case_client._busy_server.ask_until_served`); past its budget that
    raises :class:`TransientError`. Any other error is raised."""
    request = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment_name)
    try:
        described = await ask_until_served(
            lambda: client.workflow_service.describe_worker_deployment(request),
            f"describe worker deployment {deployment_name!r}",
            backoff,
        )
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            return None
        raise
    current = described.worker_deployment_info.routing_config.current_deployment_version
    return current.build_id or None


async def make_current(
    client: Client,
    version: WorkerDeploymentVersion,
    *,
    wait_seconds: float = SET_CURRENT_WAIT_SECONDS,
    backoff: Backoff = START_BACKOFF,
) -> bool:
    """Make ``version`` its deployment's current version; True if it changed, False if it already was.

    The server knows a version only once its workers have polled, so this retries for up to
    ``wait_seconds`` (0.2 s apart) while the deployment or the version has no pollers yet, then raises
    :class:`TransientError`. A describe or a set-current the server asks to try again later (several
    workers of one build starting at once all make it current) is asked again with ``backoff``
    (:func:`case_client._busy_server.ask_until_served`), and past its budget raises
    :class:`TransientError` too. Making a version current is idempotent: when another worker made it
    current first, the server answers the set-current with no change (its previous version is this
    one) and this returns False. Call it after the worker has started.
    """
    if await current_build_id(client, version.deployment_name, backoff=backoff) == version.build_id:
        return False
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace,
        deployment_name=version.deployment_name,
        build_id=version.build_id,
        identity=client.identity,
    )
    what = f"make {version.deployment_name}:{version.build_id} current"
    deadline = backoff.clock() + wait_seconds
    while True:
        try:
            answer = await ask_until_served(
                lambda: client.workflow_service.set_worker_deployment_current_version(request), what, backoff
            )
        except RPCError as error:
            waiting = error.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION)
            if not waiting or backoff.clock() >= deadline:
                raise TransientError(
                    ClientErrorCode.DEPLOYMENT_NOT_CURRENT, f"could not {what}: {error.message[:200]}"
                ) from None
            await backoff.sleep(0.2)
            continue
        previous = answer.previous_deployment_version
        return not (previous.deployment_name == version.deployment_name and previous.build_id == version.build_id)


def pinned_cases_query(version: WorkerDeploymentVersion) -> str:
    """The visibility query of the cases still open on ``version``: empty means it has drained."""
    return (
        f'WorkflowType="{WORKFLOW_NAME}" AND ExecutionStatus="Running" AND '
        f'TemporalWorkerDeploymentVersion="{version.deployment_name}:{version.build_id}"'
    )


async def open_cases_on(client: Client, version: WorkerDeploymentVersion, *, limit: int = 1000) -> list[str]:
    """The workflow ids of the cases still running on ``version`` (at most ``limit``)."""
    ids: list[str] = []
    async for execution in client.list_workflows(pinned_cases_query(version), limit=limit):
        ids.append(execution.id)
    return ids

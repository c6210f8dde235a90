"""A plain `temporal server start-dev` (no case search attributes): the worker registers them itself,
or refuses to start with one line when it cannot use them."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest

from contracts.search_attributes import ALL_KEYS
from devstack.servers import start_dev_server
from tests.faults.fault_support import PROJECT_ROOT, FaultWorld, connect, worker_env

pytestmark = pytest.mark.slow


@pytest.fixture
def plain_server(tmp_path: Path):
    server = start_dev_server(tmp_path / "plain", search_attributes=False, namespaces=("wrongtypes",))
    yield server
    server.stop()


def _run(script: str, *args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    command = [sys.executable, str(PROJECT_ROOT / script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=PROJECT_ROOT)


async def test_the_worker_registers_the_case_search_attributes_and_cases_run(
    plain_server, workers, tmp_path: Path
) -> None:
    client = await connect(plain_server.address)
    before = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
    assert not {key.name for key in ALL_KEYS} & set(before.custom_attributes)

    world = FaultWorld.create(client, tmp_path / "plain")
    worker = await workers(plain_server.address, world, "worker").ready()
    env = worker_env(plain_server.address, SUPPORT_TASK_QUEUE=world.task_queue)
    state = str(world.state_dir)
    asked = await asyncio.to_thread(
        _run, "starter.py", "--state-dir", state, "ask", "Where is my order QH-1005?", env=env
    )
    assert asked.returncode == 0 and "completed" in asked.stdout, asked.stdout + asked.stderr
    listed = await asyncio.to_thread(_run, "starter.py", "--state-dir", state, "list", "--status", "completed", env=env)
    case_id = asked.stdout.split("case ", 1)[1].split()[0]
    assert case_id in listed.stdout, listed.stdout + listed.stderr

    assert "registered search attributes CaseStatus, CasePhase, OrderId, Tenant, RefundCents, Applicant" in worker.log()
    after = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
    assert {key.name: int(key.indexed_value_type) for key in ALL_KEYS}.items() <= dict(after.custom_attributes).items()
    world.engine.dispose()


async def test_a_search_attribute_of_the_wrong_type_refuses_the_start_in_one_line(plain_server, tmp_path) -> None:
    client = await connect(plain_server.address)
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace="wrongtypes", search_attributes={"CaseStatus": IndexedValueType.INDEXED_VALUE_TYPE_INT}
        )
    )
    env = worker_env(plain_server.address, TEMPORAL_NAMESPACE="wrongtypes")
    started = await asyncio.to_thread(_run, "worker.py", "--state-dir", str(tmp_path / "w"), env=env, timeout=60)
    assert started.returncode == 2, started.stdout + started.stderr
    [line] = started.stderr.strip().splitlines()
    assert line.startswith("worker: configuration error: search_attribute_type: namespace 'wrongtypes'")
    assert "CaseStatus is INDEXED_VALUE_TYPE_INT" in line and "polling task queue" not in started.stdout

"""The throwaway world an evaluation runs our retail server in: keys and a directory enrolling τ²'s
customers as tenant ``retail``'s, a database loaded from τ²'s file (copied fresh for each task), and a
session with the real server over MCP stdio for one customer and one case."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from commerce_contract.target import Target, stdio_target
from commerce_server.db import make_engine
from contracts.credentials import COMMERCE_KID
from contracts.errors import SupportError
from contracts.retail import RetailTool
from keystore import create_demo_directory, directory_location, load_directory, private_key_path
from keystore.directory_file import write_directory
from keystore.signers import KeyFileSigner
from retail_server.db import create_retail_schema
from retail_server.directory import enrol_retail
from retail_server.records import export_database, load_database
from retail_server.tau2_format import RetailDatabase
from tau2_eval.environment import Tau2


@dataclass(frozen=True)
class World:
    state_dir: Path
    template: Path
    data: RetailDatabase
    """The domain as loaded, before any task's calls."""

    def environment(self, database: Path) -> dict[str, str]:
        return {
            **os.environ,
            "RETAIL_DATABASE_URL": f"sqlite:///{database}",
            "COMMERCE_DIRECTORY": directory_location(self.state_dir, {}),
            "COMMERCE_SIGNING_KEY": str(private_key_path(self.state_dir, COMMERCE_KID)),
        }


def build_world(work_dir: Path, tau2_db: Path) -> World:
    """Keys, a directory enrolling τ²'s customers as the retail tenant's, and the loaded database."""
    state = work_dir / "state"
    create_demo_directory(state)
    template = work_dir / "retail-template.db"
    engine = make_engine(f"sqlite:///{template}")
    create_retail_schema(engine)
    data = RetailDatabase.model_validate_json(tau2_db.read_bytes())
    load_database(engine, data)
    engine.dispose()
    location = Path(directory_location(state, {}))
    customers = [(user.user_id, f"{user.name.first_name} {user.name.last_name}") for user in data.users.values()]
    write_directory(location, enrol_retail(load_directory(str(location)), customers))
    return World(state_dir=state, template=template, data=data)


def customer_of(task_id: str, gold: dict[str, Any]) -> str:
    """The one customer τ²'s gold calls of a task concern (``tau2_side.py gold``'s ``users``)."""
    if len(gold["users"]) != 1:
        raise ValueError(f"task {task_id}: τ²'s gold calls concern {len(gold['users'])} customers, not one")
    return str(gold["users"][0])


@dataclass(frozen=True)
class Prepared:
    """What every check of a run shares: the world, the tasks chosen, and τ²'s answers on their gold calls."""

    world: World
    tasks: list[dict[str, Any]]
    gold: dict[str, Any]
    """Per task id: τ²'s hashes after the gold calls, the calls that failed there, the customers concerned."""


def prepare(tau2: Tau2, task_ids: list[str], work_dir: Path) -> Prepared:
    """The tasks ``task_ids`` name, τ²'s gold answers on them (asked once) and the world (built once)."""
    paths = tau2.paths()
    known = {str(task["id"]): task for task in json.loads(Path(paths["tasks"]).read_text(encoding="utf-8"))}
    unknown = [task_id for task_id in task_ids if task_id not in known]
    if unknown:
        raise ValueError(f"τ²-bench retail has no task {unknown[0]!r}")
    world = build_world(work_dir, Path(paths["db"]))
    return Prepared(world=world, tasks=[known[task_id] for task_id in task_ids], gold=tau2.gold(task_ids))


def refusal_code(result: CallToolResult) -> str:
    """The code of a refused call (a tool error's ``{"code": ...}``)."""
    try:
        return str(json.loads(result.content[0].text)["code"])  # type: ignore[union-attr]
    except (ValueError, KeyError, IndexError, AttributeError):
        return "unreadable refusal"


def answer_of(result: CallToolResult) -> Any:
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def database_digest(database: Path) -> str:
    """SHA-256 of the domain's records in ``database`` (proposals aside): unchanged when nothing was written."""
    engine = make_engine(f"sqlite:///{database}")
    try:
        return hashlib.sha256(export_database(engine).model_dump_json().encode()).hexdigest()
    finally:
        engine.dispose()


class RetailSession:
    """One customer's case on our retail server: calls, and a write proposed, confirmed and executed."""

    def __init__(self, world: World, server: Target, customer: str, case_id: str) -> None:
        self._world = world
        self._server = server
        self.customer = customer
        self.case_id = case_id
        self._identity = load_directory(directory_location(world.state_dir, {})).identity(customer)
        self._signer = KeyFileSigner(world.state_dir)
        self._executions = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        return await self._server.call(tool, arguments, case_id=self.case_id)

    def confirmation(self, digest: str) -> str:
        """The customer's signed "yes" to the proposal ``digest`` (the sign-in service's, from its key)."""
        return self._signer.confirmation_token(self._identity, case_id=self.case_id, digest=digest)

    async def execute(
        self, proposal: dict[str, Any], *, confirmation: str | None, digest: str | None = None
    ) -> CallToolResult:
        """Execute ``proposal`` (under ``digest``, default its own) with ``confirmation`` (None: none)."""
        self._executions += 1
        execution: dict[str, Any] = {
            "proposal_id": proposal["proposal_id"],
            "digest": digest or proposal["digest"],
            "idempotency_key": f"{self.case_id}-{self._executions}",
        }
        if confirmation is not None:
            execution["confirmation_token"] = confirmation
        return await self.call(RetailTool.EXECUTE_RETAIL_PROPOSAL, {"execution": execution})

    async def confirmed(self, tool: str, arguments: dict[str, Any]) -> tuple[CallToolResult, CallToolResult | None]:
        """The write ``tool`` proposed and, unless refused, confirmed by the customer and executed."""
        proposed = await self.call(tool, arguments)
        if proposed.is_error:
            return proposed, None
        proposal = answer_of(proposed)
        return proposed, await self.execute(proposal, confirmation=self.confirmation(proposal["digest"]))


class ServerStopped(RuntimeError):
    """The retail server of a task stopped or could not be reached (its own lines are on stderr above)."""


@asynccontextmanager
async def retail_session(world: World, database: Path, customer: str, case_id: str) -> AsyncIterator[RetailSession]:
    """Our retail server started over stdio for ``customer`` on ``case_id``, on ``database``."""
    command = shlex.join(
        [
            sys.executable,
            "-m",
            "retail_server",
            "--state-dir",
            str(world.state_dir),
            "--customer",
            customer,
            "--case",
            case_id,
        ]
    )
    saved = dict(os.environ)
    os.environ.update(world.environment(database))
    try:
        async with stdio_target(command) as server:
            yield RetailSession(world, server, customer, case_id)
    except (BaseExceptionGroup, SupportError) as failure:
        if isinstance(failure, BaseExceptionGroup) and not failure.subgroup((SupportError, MCPError, OSError)):
            raise
        raise ServerStopped(f"the retail server for case {case_id} stopped (its lines are above)") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)

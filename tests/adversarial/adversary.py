"""Helpers of the adversarial suite: a real worker whose model provider is the scripted endpoint.

``scripted_world`` (and the ``adversary`` fixture of conftest.py) gives a :class:`ScriptedWorld`: a
:class:`~case_world.CaseWorld` (real Temporal dev server, production worker from ``build_worker``,
real commerce MCP server over stdio, fresh seeded SQLite database) whose model settings come from
``load_model_settings(provider.env())``, the same three variables a user sets to point the service at
a real provider. Nothing else is substituted.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from activities.model.model_settings import ModelSettings, load_model_settings
from case_history.audit import audit_from_history
from contracts.case import CaseEvent, CaseView
from contracts.names import REQUEST_KINDS
from tests.adversarial.provider import ScriptedProvider
from tests.case_world import CaseWorld, history_text, open_world, payload_text

OTHER_CUSTOMERS_DATA = (
    "bob",
    '"lin"',
    "INV-QH-2001",
    "INV-QH-3001",
    "SIMTRK2",
    "SIMTRK3",
    "South Parcel",
)
"""Strings that only the commerce records of bob (QH-2001…) and lin (QH-3001…) contain (lin's name
quoted, as in a JSON record: the bare substring occurs in ordinary words)."""


@dataclass
class ScriptedWorld:
    world: CaseWorld
    provider: ScriptedProvider
    settings: ModelSettings

    async def run(self, question: str, **kwargs: Any) -> tuple[WorkflowHandle, CaseView]:
        """Start a case and wait until it waits for a reviewer or has ended."""
        handle = await self.world.start(question, **kwargs)
        return handle, await self.world.settled(handle)

    async def events(self, handle: WorkflowHandle) -> list[CaseEvent]:
        return await self.world.cases.open(handle.id).events()

    async def event_details(self, handle: WorkflowHandle, kind: str) -> list[str]:
        return [event.detail for event in await self.events(handle) if event.kind == kind]

    def assert_no_commerce_writes(self) -> None:
        """No refund records, no tickets, and QH-1001 untouched (refunded 0, version 1)."""
        assert self.world.refund_records() == []
        assert self.world.tickets() == []
        order = self.world.order("QH-1001")
        assert (order.refunded_cents, order.version) == (0, 1)

    async def outputs(self, handle: WorkflowHandle, view: CaseView) -> dict[str, str]:
        """Everything the case exposes: the view, every case record file, the decoded history."""
        records = sorted(Path(self.world.state_dir).rglob("*.json"))
        assert view.record_path is not None and Path(view.record_path) in records
        return {
            "view": view.model_dump_json(),
            "records": "\n".join(path.read_text(encoding="utf-8") for path in records),
            "history": history_text(await handle.fetch_history()),
        }

    async def assert_nothing_of_other_customers(self, handle: WorkflowHandle, view: CaseView) -> None:
        outputs = await self.outputs(handle, view)
        for where, text in outputs.items():
            text = without_key_noise(text)
            for needle in OTHER_CUSTOMERS_DATA:
                assert needle not in text, f"{needle!r} appears in the {where}"


JWS = re.compile(r"eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")
JWK_KEY_MATERIAL = re.compile(r'"x"\s*:\s*"[A-Za-z0-9_-]+"')


def _base64url_text(part: str) -> str:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode("utf-8", "replace")


def without_key_noise(text: str) -> str:
    """``text`` with each signed token read as what it says (its header and claims, decoded; its
    signature dropped) and each public key's material dropped: those are random base64url, in which a
    short needle ("bob") turns up by chance in about one run of a few hundred. What a token claims is
    still searched."""

    def claims(match: re.Match[str]) -> str:
        header, payload, _signature = match.group(0).split(".")
        return f"{_base64url_text(header)} {_base64url_text(payload)}"

    return JWK_KEY_MATERIAL.sub('"x": "…"', JWS.sub(claims, text))


def scheduled_activities(history) -> list[tuple[str, str]]:
    """(activity type, decoded input) for every regular activity the workflow scheduled (a local
    activity records no input: see :func:`tool_runs` for the investigation tools, which run so)."""
    scheduled = []
    for event in json.loads(history.to_json())["events"]:
        attributes = event.get("activityTaskScheduledEventAttributes")
        if not attributes:
            continue
        name = attributes["activityType"]["name"]
        payloads = (attributes.get("input") or {}).get("payloads") or []
        text = "\n".join(payload_text(p) for p in payloads)
        scheduled.append((name, text))
    return scheduled


def tool_runs(history) -> list[tuple[str, dict[str, str]]]:
    """(tool, arguments) of every investigation tool the workflow ran, as a regular activity (its
    scheduled input) or a local one (its marker, with the arguments of the model's proposed call),
    read by the auditor's reader, :func:`case_history.audit.audit_from_history`."""
    runs = []
    for call in audit_from_history(history).tool_calls:
        assert call.tool is not None
        runs.append((call.tool.name, dict(call.tool.arguments)))
    return runs


def with_timeout(settings: ModelSettings, seconds: float) -> ModelSettings:
    """``settings`` with one timeout for every request kind."""
    return settings.model_copy(update={"timeout_seconds": seconds, "timeouts": dict.fromkeys(REQUEST_KINDS, seconds)})


@asynccontextmanager
async def scripted_world(
    client: Client,
    state_dir: Path,
    provider: ScriptedProvider,
    *,
    directory: str | None = None,
    **settings_overrides: Any,
) -> AsyncIterator[ScriptedWorld]:
    """A world whose worker talks to ``provider`` (and reads ``directory``, else the test session's);
    ``settings_overrides`` (e.g. ``timeout_seconds``) replace fields of the settings loaded from the
    provider's environment."""
    settings = load_model_settings(provider.env())
    if "timeout_seconds" in settings_overrides:
        settings = with_timeout(settings, settings_overrides.pop("timeout_seconds"))
    if settings_overrides:
        settings = settings.model_copy(update=settings_overrides)
    world, worker, cleanup = await open_world(client, state_dir, model_settings=settings, directory=directory)
    try:
        async with worker:
            yield ScriptedWorld(world, provider, settings)
    finally:
        await cleanup()
        world.engine.dispose()

"""The channel served for real (uvicorn on a free port of this machine) and a Server-Sent Events reader
that reads it as a client does, for the end-to-end and browser tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import uvicorn
from starlette.applications import Starlette

from devstack.servers import free_port


@asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[str]:
    """``app`` on ``http://localhost:PORT`` until the block ends; yields that origin."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started or task.done():
                break
            await asyncio.sleep(0.05)
        assert server.started, "the channel did not start"
        yield f"http://localhost:{port}"
    finally:
        server.should_exit = True
        await task


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    id: int | None = None


@dataclass
class EventReader:
    """What one client read from a progress stream, connection after connection."""

    events: list[Event] = field(default_factory=list)
    comments: int = 0

    @property
    def offsets(self) -> list[int]:
        return [event.id for event in self.events if event.id is not None]

    @property
    def last_id(self) -> int | None:
        return self.offsets[-1] if self.offsets else None

    def kinds(self) -> list[str]:
        return [event.data["kind"] for event in self.events if event.name == "progress"]

    async def read(self, http: httpx2.AsyncClient, url: str, headers: dict[str, str], *, until: str) -> None:
        """Read the stream at ``url`` (from after :attr:`last_id`) until an item of kind ``until`` or an
        ``end`` event arrives, then drop the connection."""
        sent = dict(headers)
        if self.last_id is not None:
            sent["Last-Event-ID"] = str(self.last_id)
        async with http.stream("GET", url, headers=sent, timeout=httpx2.Timeout(10, read=90)) as answer:
            assert answer.status_code == 200, await answer.aread()
            block: list[str] = []
            async for line in answer.aiter_lines():
                if line:
                    block.append(line)
                    continue
                event = self._parse(block)
                block = []
                if event is None:
                    continue
                self.events.append(event)
                if event.name == "end" or event.data.get("kind") == until:
                    return

    def _parse(self, block: list[str]) -> Event | None:
        fields: dict[str, str] = {}
        for line in block:
            if line.startswith(":"):
                self.comments += 1
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
        if "event" not in fields:
            return None
        return Event(fields["event"], json.loads(fields["data"]), int(fields["id"]) if "id" in fields else None)

"""A model request that times out is abandoned: the gateway's client closes the connection, which is
how a server learns to stop (llama-server cancels a task whose connection closed; see docs/compat.md),
and the failure is a timeout that names the model and the seconds."""

from __future__ import annotations

import asyncio

import pytest

from activities.model.model_gateway import ModelGateway
from activities.model.model_settings import load_model_settings
from contracts.errors import TransientError
from contracts.knowledge import Language
from contracts.model_io import PlanRequest


async def test_a_timed_out_request_closes_its_connection_and_names_the_model() -> None:
    closed = asyncio.Event()
    received = asyncio.Event()

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the request head: the server is now "working on it"
        received.set()
        while await reader.read(65536):  # the body, then nothing until the client hangs up
            pass
        closed.set()
        writer.close()

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "SUPPORT_MODEL": "slow-cpu-model"}
    gateway = ModelGateway(load_model_settings(env | {"SUPPORT_MODEL_TIMEOUT_SECONDS_PLAN": "1"}))
    try:
        with pytest.raises(TransientError) as raised:
            await gateway.plan(PlanRequest(case_id="c1", question="Where is QH-1001?", language=Language.EN))
        assert received.is_set()
        await asyncio.wait_for(closed.wait(), timeout=10)  # the client hung up, it did not keep waiting
    finally:
        await gateway.aclose()
        server.close()
        await server.wait_closed()
    assert raised.value.code == "provider_timeout"
    assert "model 'slow-cpu-model' timed out after 1 s" in str(raised.value)

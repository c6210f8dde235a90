"""The commerce server's log lines: each refund paid once, with its case, order, amount and receipt
(never again on a replay), and each refusal as one line with its code and case, without a stack."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp.client import Client
from sqlalchemy import Engine

from commerce_server.db import make_engine
from commerce_server.refunds import PAID_LOGGER
from commerce_server.seed import seed_fixture
from commerce_server.server import build_stdio_server
from commerce_server.service import CommerceService
from contracts.commerce import RefundApproval
from contracts.logs import LogFormat, LogFormatter, Service
from contracts.tools import ToolName
from keystore import demo_identity
from tests.conftest import DemoKeys


@pytest.fixture
def engine(tmp_path: Path, demo_keys: DemoKeys, monkeypatch: pytest.MonkeyPatch) -> Engine:
    for name, value in demo_keys.commerce_environment().items():
        monkeypatch.setenv(name, value)
    engine = make_engine(f"sqlite:///{tmp_path / 'commerce.db'}")
    seed_fixture(engine)
    return engine


def test_a_paid_refund_is_logged_once_with_its_case_order_amount_and_receipt(
    engine: Engine, refund_approval: Callable[..., RefundApproval], caplog: pytest.LogCaptureFixture
) -> None:
    alice = CommerceService(engine, demo_identity("alice"))
    approval = refund_approval(alice.get_order("QH-1001"))
    with caplog.at_level(logging.INFO, logger=PAID_LOGGER):
        receipt = alice.execute_refund(approval)
        assert alice.execute_refund(approval) == receipt  # a replay pays nothing and logs nothing
    paid = [record for record in caplog.records if record.name == PAID_LOGGER]
    assert len(paid) == 1
    [line] = paid
    fields = {name: line.__dict__.get(name) for name in ("case_id", "order_id", "amount_cents", "receipt_id")}
    assert fields == {
        "case_id": approval.proposal.case_id,
        "order_id": "QH-1001",
        "amount_cents": 12900,
        "receipt_id": receipt.receipt_id,
    }
    text = LogFormatter(Service.COMMERCE).format(line)
    assert f"receipt {receipt.receipt_id}" in text and "12900 CNY" in text
    assert approval.approval_token is not None and approval.approval_token not in text


async def test_a_refusal_is_one_line_with_its_code_and_case(
    engine: Engine, refund_approval: Callable[..., RefundApproval], caplog: pytest.LogCaptureFixture
) -> None:
    alice = CommerceService(engine, demo_identity("alice"))
    unsigned = refund_approval(alice.get_order("QH-1001"), reviewer="nobody")  # no approval token
    server = build_stdio_server(engine, demo_identity("alice"))
    with caplog.at_level(logging.INFO, logger="commerce_server.server"):
        async with Client(server, cache=None) as client:
            result = await client.call_tool(ToolName.EXECUTE_REFUND, {"approval": unsigned.model_dump(mode="json")})
    assert result.is_error is True
    [refusal] = [record for record in caplog.records if record.name == "commerce_server.server"]
    case_id = unsigned.proposal.case_id
    assert refusal.getMessage() == f"execute_refund refused: approval_signature_required (case {case_id})"
    assert (refusal.__dict__["code"], refusal.__dict__["case_id"]) == ("approval_signature_required", case_id)
    assert refusal.exc_info is None
    line = LogFormatter(Service.COMMERCE, LogFormat.JSON).format(refusal)
    assert "\n" not in line and "Traceback" not in line

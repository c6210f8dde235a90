"""Investigation tools and settlement against a real commerce MCP server over stdio.

Every test that touches commerce starts ``python -m commerce_server`` through the session pool, on a
temporary SQLite database seeded from the fictional fixture.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.case.preferences import LanguagePreferences
from activities.commerce.commerce_sessions import CommerceSessionPool
from activities.commerce.settlement import SettlementActivities
from activities.commerce.tool_activities import ToolActivities
from commerce_server.db import make_engine
from commerce_server.seed import load_fixture, seed_fixture
from commerce_server.tokens import DIRECTORY_ENV as COMMERCE_DIRECTORY_ENV
from commerce_server.tokens import SIGNING_KEY_ENV as COMMERCE_SIGNING_KEY_ENV
from contracts.case import SettleRequest
from contracts.commerce import Order, RefundProposal
from contracts.errors import TransientError
from contracts.identity import Identity
from contracts.knowledge import Language, Passage
from contracts.model_io import ToolObservation, ToolRequest
from keystore import DIRECTORY_ENV, create_demo_directory, demo_identity
from keystore.signers import KeyFileSigner
from knowledge.refund_quote import calculate_refund_quote, policy_page_versions
from knowledge.store import KnowledgeBase, default_knowledge_base
from tests.activities.activity_support import run_bounded

ALICE = demo_identity("alice")


# --- helpers -------------------------------------------------------------------------------------


def _seeded_state_dir(path: Path) -> tuple[Path, str]:
    path.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{path.resolve() / 'commerce.db'}"
    seed_fixture(make_engine(url))
    return path, url


@asynccontextmanager
async def _tools(state_dir: Path, url: str) -> AsyncIterator[ToolActivities]:
    pool = CommerceSessionPool(state_dir, url)
    try:
        yield ToolActivities(pool, default_knowledge_base(), LanguagePreferences(state_dir))
    finally:
        await pool.aclose()


def _request(
    name: str,
    arguments: dict[str, str],
    *,
    language: Language = Language.EN,
    applicant: Identity = ALICE,
    call_id: str = "call-1",
) -> ToolRequest:
    return ToolRequest(
        case_id="case-test",
        applicant=applicant,
        language=language,
        call_id=call_id,
        name=name,
        arguments=arguments,
    )


async def _run(tools: ToolActivities, request: ToolRequest) -> ToolObservation:
    return await run_bounded(tools.run_investigation_tool, request)


def _live_profiles(tools: ToolActivities) -> list[str]:
    assert isinstance(tools.pool, CommerceSessionPool)
    return tools.pool.live_profiles()


def _server_pids(state_dir: Path) -> list[int]:
    """Live (not zombie) ``commerce_server`` processes started by this test process for ``state_dir``."""
    marker = str(state_dir.resolve())
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        args = [arg.decode() for arg in argv]
        if int(ppid) == os.getpid() and state != "Z" and "commerce_server" in args and marker in args:
            pids.append(int(entry.name))
    return sorted(pids)


def _knowledge_with_returns_version(version: str) -> KnowledgeBase:
    """The packaged knowledge base with the RETURNS terms (the refund rule's pages) at another version."""
    packaged = default_knowledge_base()
    documents = {
        doc_id: header.model_copy(update={"version": version}) if doc_id == "RETURNS" else header
        for doc_id, header in packaged.documents.items()
    }
    passages = [
        passage.model_copy(update={"doc_version": version}) if passage.doc_id == "RETURNS" else passage
        for passage in packaged.passages
    ]
    return KnowledgeBase(documents, passages)


async def _wait_until_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"process {pid} is still running")


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return _seeded_state_dir(tmp_path_factory.mktemp("commerce-shared"))


@pytest.fixture(scope="module")
async def tools(seeded: tuple[Path, str]) -> AsyncIterator[ToolActivities]:
    async with _tools(*seeded) as activities:
        yield activities


# --- commerce reads ------------------------------------------------------------------------------


async def test_get_order_reads_alices_order(tools: ToolActivities) -> None:
    observation = await _run(tools, _request("get_order", {"order_id": "QH-1001"}))

    assert observation.ok and observation.call_id == "call-1"
    order = Order.model_validate(observation.result)
    assert (order.order_id, order.customer, order.paid_items_cents, order.freight_cents) == (
        "QH-1001",
        "alice",
        12900,
        1200,
    )


async def test_another_customers_order_is_an_observation_without_their_data(tools: ToolActivities) -> None:
    observation = await _run(tools, _request("get_order", {"order_id": "QH-2001"}))
    missing = await _run(tools, _request("get_order", {"order_id": "QH-1099"}))

    assert not observation.ok
    assert observation.error_code == "order_not_accessible"
    assert (missing.error_code, missing.error_message) == (observation.error_code, observation.error_message)
    text = observation.model_dump_json()
    bobs = next(order for order in load_fixture()["orders"] if order["order_id"] == "QH-2001")
    forbidden = ["bob", "Bob", "QH-2001", bobs["invoice"]["invoice_id"], bobs["shipment"]["tracking_number"]]
    amounts = ("list_cents", "discount_cents", "paid_items_cents", "freight_cents")
    forbidden += [str(bobs[key]) for key in amounts]
    assert [value for value in forbidden if value in text] == []


async def test_list_orders_is_scoped_to_the_applicant(tools: ToolActivities) -> None:
    observation = await _run(tools, _request("list_orders", {}))

    assert observation.result is not None
    ids = [order["order_id"] for order in observation.result["orders"]]
    assert ids == [f"QH-10{n:02d}" for n in range(1, 13)]


# --- knowledge -----------------------------------------------------------------------------------


@pytest.mark.parametrize("language", [Language.EN, Language.ZH])
async def test_calculate_refund_quotes_12900_with_both_policy_pages(tools: ToolActivities, language: Language) -> None:
    observation = await _run(tools, _request("calculate_refund", {"order_id": "QH-1001"}, language=language))

    assert observation.ok and observation.result is not None
    quote = observation.result["quote"]
    assert (quote["eligible"], quote["reason"], quote["amount_cents"]) == (True, "eligible", 12900)
    assert quote["citations"] == ["RETURNS:p02", "RETURNS:p03"]
    passages = observation.result["passages"]
    assert {p["page_id"] for p in passages} == {"RETURNS:p02", "RETURNS:p03"}
    assert all(p["passage_id"].split(":")[2] == language.value for p in passages)
    assert all(p["text"] and p["title"] for p in passages)


async def test_calculate_refund_checks_the_policy_pages_of_the_workers_knowledge_base(tools: ToolActivities) -> None:
    """The knowledge base the worker was built with, not the packaged one, decides the policy version."""
    newer = ToolActivities(tools.pool, _knowledge_with_returns_version("2026-10"), tools.preferences)

    observation = await _run(newer, _request("calculate_refund", {"order_id": "QH-1001"}))

    assert observation.ok and observation.result is not None
    quote = observation.result["quote"]
    assert (quote["eligible"], quote["reason"], quote["amount_cents"]) == (False, "policy_version_mismatch", 0)
    assert {p["doc_version"] for p in observation.result["passages"]} == {"2026-10"}
    packaged = await _run(tools, _request("calculate_refund", {"order_id": "QH-1001"}))
    assert packaged.result is not None
    assert packaged.result["quote"]["reason"] == "eligible"


async def test_calculate_refund_of_a_foreign_order_is_refused(tools: ToolActivities) -> None:
    observation = await _run(tools, _request("calculate_refund", {"order_id": "QH-2001"}))

    assert not observation.ok and observation.result is None
    assert observation.error_code == "order_not_accessible"


@pytest.mark.parametrize(("language", "query"), [(Language.EN, "refund window days"), (Language.ZH, "退款期限")])
async def test_search_knowledge_returns_only_the_requested_language(
    tools: ToolActivities, language: Language, query: str
) -> None:
    observation = await _run(tools, _request("search_knowledge", {"query": query}, language=language))

    assert observation.result is not None
    passages = observation.result["passages"]
    assert 1 <= len(passages) <= 4
    assert all(p["passage_id"].split(":")[2] == language.value for p in passages)
    assert all({"passage_id", "page_id", "title", "text", "score"} <= set(p) for p in passages)
    assert all(Passage.model_validate({k: p[k] for k in Passage.model_fields}) for p in passages)
    assert not any(p["page_id"].startswith(("RETURNS_OLD", "SOUTH_TERMS")) for p in passages)


async def test_read_knowledge_applies_tenant_date_and_language(tools: ToolActivities) -> None:
    ok = await _run(tools, _request("read_knowledge", {"passage_id": "RETURNS:p02:en:0"}))
    other_language = await _run(tools, _request("read_knowledge", {"passage_id": "RETURNS:p02:zh:0"}))
    archived = await _run(tools, _request("read_knowledge", {"passage_id": "RETURNS_OLD:p01:en:0"}))

    assert ok.ok and ok.result is not None and ok.result["page_id"] == "RETURNS:p02" and ok.result["language"] == "en"
    assert (other_language.ok, other_language.error_code) == (False, "passage_not_accessible")
    assert (archived.ok, archived.error_code) == (False, "passage_not_accessible")


async def test_load_skill_and_language_preference(tools: ToolActivities) -> None:
    skill = await _run(tools, _request("load_skill", {"name": "refund"}, language=Language.ZH))
    unknown = await _run(tools, _request("load_skill", {"name": "payout"}))
    before = await _run(tools, _request("get_language_preference", {}))
    tools.preferences.remember("alice", "zh", consent=True)
    after = await _run(tools, _request("get_language_preference", {}))

    assert skill.ok and skill.result is not None and skill.result["name"] == "refund" and skill.result["body"]
    assert (unknown.ok, unknown.error_code) == (False, "skill_not_found")
    assert before.result == {"language": None}
    assert after.result == {"language": "zh"}


# --- defensive checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "error_type"),
    [
        ("execute_refund", {"order_id": "QH-1001"}, "authorization"),
        ("create_ticket", {"order_id": "QH-1001"}, "authorization"),
        ("save_case_note", {"note": "x"}, "authorization"),
        ("delete_everything", {}, "authorization"),
        ("get_order", {"order_id": "QH-1001", "customer": "bob"}, "contract"),
        ("get_order", {"order_id": "QH-1001; DROP"}, "contract"),
    ],
)
async def test_requests_the_workflow_should_have_refused_fail_without_retry(
    tools: ToolActivities, name: str, arguments: dict[str, str], error_type: str
) -> None:
    with pytest.raises(ApplicationError) as caught:
        await _run(tools, _request(name, arguments))

    assert (caught.value.type, caught.value.non_retryable) == (error_type, True)


async def test_an_identity_not_in_the_directory_is_refused(tools: ToolActivities) -> None:
    forged = ALICE.model_copy(update={"tenant": "south"})

    with pytest.raises(ApplicationError) as caught:
        await _run(tools, _request("get_order", {"order_id": "QH-3001"}, applicant=forged))

    assert (caught.value.type, caught.value.non_retryable) == ("authorization", True)


# --- the session pool ----------------------------------------------------------------------------


async def test_one_session_per_profile_is_reused_across_calls(tmp_path: Path) -> None:
    state_dir, url = _seeded_state_dir(tmp_path / "reuse")
    async with _tools(state_dir, url) as tools:
        concurrent = [_request("get_order", {"order_id": f"QH-100{n}"}, call_id=f"c{n}") for n in range(1, 6)]
        first = await asyncio.gather(*(_run(tools, request) for request in concurrent))
        pids = _server_pids(state_dir)
        sequential = [
            _request("list_orders", {}),
            _request("get_invoice", {"order_id": "QH-1009"}),
            _request("get_product", {"sku": "LAMP-02"}),
        ]
        later = [await _run(tools, request) for request in sequential]
        bob = await tools.pool.call(demo_identity("bob"), "get_order", {"order_id": "QH-2001"}, case_id="case-test")

        assert all(o.ok for o in first + later)
        assert bob["customer"] == "bob"
        assert len(pids) == 1
        assert _live_profiles(tools) == ["alice", "bob"]
        assert len(_server_pids(state_dir)) == 2 and pids[0] in _server_pids(state_dir)

    assert _server_pids(state_dir) == []


async def test_a_killed_server_is_a_transient_failure_then_a_fresh_session(tmp_path: Path) -> None:
    state_dir, url = _seeded_state_dir(tmp_path / "kill")
    async with _tools(state_dir, url) as tools:
        assert (await _run(tools, _request("get_order", {"order_id": "QH-1001"}))).ok
        [old_pid] = _server_pids(state_dir)

        os.kill(old_pid, signal.SIGKILL)
        await _wait_until_gone(old_pid)

        with pytest.raises(ApplicationError) as caught:
            await _run(tools, _request("get_order", {"order_id": "QH-1001"}))
        assert caught.value.type == "transient" and not caught.value.non_retryable
        assert caught.value.details[0]["code"] == "commerce_unavailable"
        assert _live_profiles(tools) == []

        retried = await _run(tools, _request("get_order", {"order_id": "QH-1001"}))
        [new_pid] = _server_pids(state_dir)

        assert retried.ok and new_pid != old_pid


async def test_a_session_that_cannot_open_is_transient_and_not_kept(tmp_path: Path) -> None:
    attempts = 0

    @asynccontextmanager
    async def failing_opener(profile: str) -> AsyncIterator[Any]:
        nonlocal attempts
        attempts += 1
        raise OSError("no such executable")
        yield

    pool = CommerceSessionPool(tmp_path, opener=failing_opener)
    for _ in range(2):
        with pytest.raises(TransientError) as caught:
            await pool.call(ALICE, "list_orders", {}, case_id="case-test")
        assert caught.value.code == "commerce_unavailable"
    await pool.aclose()

    assert attempts == 2 and pool.live_profiles() == []


async def test_sessions_are_exited_by_their_owner_task(tmp_path: Path) -> None:
    """The context manager's exit runs in the task that entered it, not in the caller's task."""
    tasks: dict[str, asyncio.Task[Any] | None] = {}

    class Echo:
        async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            return {"tool": tool}

        async def list_tools(self) -> list[Any]:
            return []

        async def read_resource(self, uri: str) -> str:
            raise NotImplementedError(uri)

    @asynccontextmanager
    async def opener(profile: str) -> AsyncIterator[Echo]:
        tasks["enter"] = asyncio.current_task()
        try:
            yield Echo()
        finally:
            tasks["exit"] = asyncio.current_task()

    pool = CommerceSessionPool(tmp_path, opener=opener)
    assert await pool.call(ALICE, "list_orders", {}, case_id="case-test") == {"tool": "list_orders"}
    await pool.aclose()

    assert tasks["enter"] is tasks["exit"] is not asyncio.current_task()
    with pytest.raises(TransientError):
        await pool.call(ALICE, "list_orders", {}, case_id="case-test")


# --- settlement ----------------------------------------------------------------------------------


async def test_execute_refund_pays_once_per_approval_and_refuses_a_changed_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir, url = _seeded_state_dir(tmp_path / "settle")
    create_demo_directory(state_dir)  # the stdio server checks approvals with <state dir>/keys (starter.py init)
    # ... when no other directory is named: the test session names its own for every commerce server,
    # and for the signer that looks the reviewer's kid up
    monkeypatch.delenv(COMMERCE_DIRECTORY_ENV)
    monkeypatch.delenv(COMMERCE_SIGNING_KEY_ENV)
    monkeypatch.delenv(DIRECTORY_ENV)
    now = datetime.now(UTC)
    async with _tools(state_dir, url) as tools:
        order = Order.model_validate(
            await tools.pool.call(ALICE, "get_order", {"order_id": "QH-1001"}, case_id="case-test")
        )
        quote = calculate_refund_quote(order, page_versions=policy_page_versions(default_knowledge_base()))
        proposal = RefundProposal(
            case_id="case-settle",
            applicant="alice",
            tenant="qinghe",
            order_id="QH-1001",
            order_version=quote.order_version,
            rule_version=quote.rule_version,
            amount_cents=quote.amount_cents,
            currency=quote.currency,
            quote_id=quote.quote_id,
            created_at=now,
            expires_at=now + timedelta(minutes=15),
            ledger_id=quote.ledger_id,
        )
        request = SettleRequest(
            case_id="case-settle",
            applicant=ALICE,
            approval_id="APR-test-0001",
            proposal=proposal,
            digest=proposal.digest(),
            reviewer="chen",
            approved_at=now,
            approval_token=KeyFileSigner(state_dir).approval_token(
                demo_identity("chen"), case_id="case-settle", digest=proposal.digest(), decision="approve", now=now
            ),
            applicant_token=KeyFileSigner(state_dir).applicant_token(ALICE, "case-settle", now=now),
        )
        settlement = SettlementActivities(tools.pool)
        env = ActivityEnvironment()

        receipt = await env.run(settlement.execute_refund, request)
        replay = await env.run(settlement.execute_refund, request)
        after = Order.model_validate(
            await tools.pool.call(ALICE, "get_order", {"order_id": "QH-1001"}, case_id="case-test")
        )
        changed = proposal.model_copy(update={"amount_cents": 14100})
        with pytest.raises(ApplicationError) as conflict:
            await run_bounded(
                settlement.execute_refund,
                request.model_copy(update={"proposal": changed, "digest": changed.digest()}),
                env=env,
            )
        # alice names herself (or chen) without a reviewer's signature: nothing is paid
        self_approved = request.model_copy(
            update={"approval_id": "APR-test-0002", "reviewer": "alice", "approval_token": None}
        )
        with pytest.raises(ApplicationError) as refused:
            await run_bounded(settlement.execute_refund, self_approved, env=env)

    assert receipt == replay
    assert receipt.receipt_id.startswith("SIM-") and receipt.amount_cents == 12900 and receipt.simulated
    assert (after.refunded_cents, after.version) == (12900, 2)
    assert (conflict.value.type, conflict.value.non_retryable) == ("business", True)
    assert json.loads(json.dumps(conflict.value.details[0]))["code"] == "idempotency_conflict"
    assert (refused.value.type, refused.value.non_retryable) == ("authorization", True)
    assert refused.value.details[0]["code"] == "approval_signature_required"

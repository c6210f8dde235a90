"""The kit's retail profile: the contract as a merchant server speaking τ²-bench's retail tools keeps it
(``python -m commerce_contract --profile retail``; docs/evaluation.md).

The same clauses as the commerce profile's action checks, through the retail tools: every tool is
offered; reads answer for the signed-in customer only; a write answers with a proposal that changes
nothing, whose effect is the retail rules' (recomputed here from what the reads answer) and whose
digest recomputes; executing needs the customer's confirmation of that very proposal; a confirmed
execution happens once (the same request is a replay, another body a conflict); a write the tenant's
policy does not name is refused. The fixture (``--fixture``, JSON) names the customer, one of their
pending orders, and another customer's order and e-mail address.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from commerce_contract.context import CheckFailed, CheckSkipped, text_of
from commerce_contract.fixture import FixtureErrorCode, KitKeys
from commerce_contract.target import Target
from contracts.action_credentials import RECEIPT_AUDIENCE
from contracts.credentials import COMMERCE_KID, key_set, verified_claims
from contracts.errors import CommerceErrorCode, ConfigurationError
from contracts.identity import Identity
from contracts.retail import RetailProposal, RetailReceipt, RetailTool, RetailWrite
from retail_server import rules
from retail_server import tau2_format as t2

CANCEL = RetailWrite.CANCEL_PENDING_ORDER


class RetailFixture(BaseModel):
    customer: str
    pending_order: str
    other_customers_order: str
    other_customers_email: str


def load_retail_fixture(path: Path | None) -> RetailFixture:
    if path is None:
        raise ConfigurationError(
            FixtureErrorCode.FIXTURE_INVALID, "The retail profile needs --fixture (its customer and orders)."
        )
    try:
        return RetailFixture.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as error:
        raise ConfigurationError(
            FixtureErrorCode.FIXTURE_INVALID, f"{path} is no retail fixture ({type(error).__name__})."
        ) from None


@dataclass
class RetailRun:
    target: Target
    fixture: RetailFixture
    keys: KitKeys
    customer: Identity
    cancel: RetailProposal | None = None

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = await self.target.call(tool, arguments, case_id="")
        return result

    async def answer(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = await self.call(tool, arguments)
        if result.is_error:
            raise CheckFailed(f"{tool} refused: {text_of(result)[:160]}")
        text = text_of(result)
        try:
            return json.loads(text)
        except ValueError:
            return text

    async def refused(self, tool: str, arguments: dict[str, Any]) -> str:
        result = await self.call(tool, arguments)
        if not result.is_error:
            raise CheckFailed(f"{tool}({', '.join(map(str, arguments.values()))[:80]}) was answered")
        try:
            return str(json.loads(text_of(result))["code"])
        except (ValueError, KeyError):
            raise CheckFailed(f"{tool}'s refusal carries no code: {text_of(result)[:100]}") from None

    async def order(self) -> t2.Order:
        return t2.Order.model_validate(await self.answer(RetailTool.GET_ORDER_DETAILS, {"order_id": self.pending}))

    @property
    def pending(self) -> str:
        return self.fixture.pending_order

    def confirmation(self, proposal: RetailProposal) -> str:
        return self.keys.signer.confirmation_token(self.customer, case_id=proposal.case_id, digest=proposal.digest)

    def execution(self, proposal: RetailProposal, **fields: Any) -> dict[str, Any]:
        body = {"proposal_id": proposal.proposal_id, "digest": proposal.digest, "idempotency_key": uuid.uuid4().hex}
        return {"execution": body | fields}


RetailCheck = Callable[[RetailRun], Awaitable[str]]


async def retail_tool_list(run: RetailRun) -> str:
    offered = {tool.name for tool in await run.target.list_tools()}
    missing = [tool.value for tool in RetailTool if tool.value not in offered]
    if missing:
        raise CheckFailed(f"missing tools: {', '.join(missing)}")
    return f"all {len(RetailTool)} retail tools are offered"


async def retail_identity_scoping(run: RetailRun) -> str:
    other_order = await run.refused(RetailTool.GET_ORDER_DETAILS, {"order_id": run.fixture.other_customers_order})
    email = await run.refused(RetailTool.FIND_USER_ID_BY_EMAIL, {"email": run.fixture.other_customers_email})
    found = await run.answer(RetailTool.FIND_USER_ID_BY_EMAIL, {"email": _email(await _user(run))})
    if found != run.customer.subject:
        raise CheckFailed(f"the customer's own e-mail found {found!r}")
    return f"another customer's order refused {other_order}, their e-mail {email}; the customer's own found"


async def _user(run: RetailRun) -> t2.User:
    return t2.User.model_validate(await run.answer(RetailTool.GET_USER_DETAILS, {"user_id": run.customer.subject}))


def _email(user: t2.User) -> str:
    return user.email


async def retail_proposal_exact(run: RetailRun) -> str:
    before = await run.order()
    user = await _user(run)
    proposal = RetailProposal.model_validate(
        await run.answer(CANCEL, {"order_id": run.pending, "reason": "no longer needed"})
    )
    if proposal.computed_digest() != proposal.digest:
        raise CheckFailed("the proposal's digest does not recompute from its fields")
    versions = (proposal.effect.user_version, proposal.effect.order_version or 0)
    expected = rules.cancel(before, user, versions, "no longer needed")
    if proposal.effect != expected:
        raise CheckFailed(f"the effect is not the rules': {proposal.effect.model_dump_json()[:200]}")
    if await run.order() != before:
        raise CheckFailed(f"proposing changed {run.pending}")
    run.cancel = proposal
    return f"{run.pending}: cancel refunds {proposal.effect.refund_cents} cents, as the rules say; nothing changed"


def _cancel(run: RetailRun) -> RetailProposal:
    if run.cancel is None:
        raise CheckSkipped("no proposal was made (retail_proposal_exact failed)")
    return run.cancel


async def retail_confirmation_required(run: RetailRun) -> str:
    proposal = _cancel(run)
    code = await run.refused(RetailTool.EXECUTE_RETAIL_PROPOSAL, run.execution(proposal))
    if code != CommerceErrorCode.CONFIRMATION_REQUIRED:
        raise CheckFailed(f"an execution without the customer's confirmation refused {code}")
    return f"an execution without the customer's confirmation refused {code}"


async def retail_confirmation_of_another_proposal(run: RetailRun) -> str:
    proposal = _cancel(run)
    order = await run.order()
    moved = order.address.model_dump() | {"address1": f"{order.address.address1} (kit)", "order_id": run.pending}
    other = RetailProposal.model_validate(await run.answer(RetailWrite.MODIFY_PENDING_ORDER_ADDRESS, moved))
    arguments = run.execution(other, confirmation_token=run.confirmation(proposal))
    code = await run.refused(RetailTool.EXECUTE_RETAIL_PROPOSAL, arguments)
    if code != CommerceErrorCode.CONFIRMATION_INVALID:
        raise CheckFailed(f"a confirmation of another proposal refused {code}")
    if await run.order() != order:
        raise CheckFailed("a refused execution changed the order")
    return f"an address change executed with the cancellation's confirmation refused {code}, nothing changed"


async def retail_executes_once(run: RetailRun) -> str:
    proposal = _cancel(run)
    arguments = run.execution(proposal, confirmation_token=run.confirmation(proposal))
    receipt = RetailReceipt.model_validate(await run.answer(RetailTool.EXECUTE_RETAIL_PROPOSAL, arguments))
    claims = verified_claims(
        receipt.signature, key_set(run.keys.directory), audience=RECEIPT_AUDIENCE, allowed_kids=(COMMERCE_KID,)
    )
    if claims.get("digest") != proposal.digest or receipt.replay:
        raise CheckFailed("the receipt is not the signed word on this proposal")
    if (await run.order()).status != "cancelled":
        raise CheckFailed(f"{run.pending} was not cancelled")
    again = RetailReceipt.model_validate(await run.answer(RetailTool.EXECUTE_RETAIL_PROPOSAL, arguments))
    if not again.replay or again.receipt_id != receipt.receipt_id:
        raise CheckFailed("the same request did not answer the same receipt as a replay")
    other_key = {"execution": arguments["execution"] | {"idempotency_key": uuid.uuid4().hex}}
    code = await run.refused(RetailTool.EXECUTE_RETAIL_PROPOSAL, other_key)
    if code != CommerceErrorCode.IDEMPOTENCY_CONFLICT:
        raise CheckFailed(f"the same proposal under another key refused {code}")
    return f"cancelled once (receipt {receipt.receipt_id}, signed); the same request a replay, another key {code}"


async def retail_default_deny(run: RetailRun) -> str:
    denied = [w for w in RetailWrite if run.keys.directory.action_rule(run.customer.tenant, w.action_kind) is None]
    if not denied:
        raise CheckSkipped(f"the directory allows every retail write in tenant {run.customer.tenant!r}")
    code = await run.refused(denied[0], _arguments_of(denied[0], run))
    if code != CommerceErrorCode.ACTION_NOT_ALLOWED:
        raise CheckFailed(f"{denied[0].value}, which the policy does not name, was refused {code}")
    return f"{denied[0].value}, which tenant {run.customer.tenant!r} does not allow, refused {code}"


def _arguments_of(write: RetailWrite, run: RetailRun) -> dict[str, Any]:
    """Arguments of the right shape for ``write`` (their values need not hold: a denied write is refused first)."""
    address = {"address1": "1 Kit St", "address2": "", "city": "Kit", "state": "KT", "country": "USA", "zip": "00000"}
    swap = {"item_ids": [], "new_item_ids": [], "payment_method_id": "gift_card_0000000"}
    samples: dict[RetailWrite, dict[str, Any]] = {
        RetailWrite.CANCEL_PENDING_ORDER: {"order_id": run.pending, "reason": "no longer needed"},
        RetailWrite.MODIFY_PENDING_ORDER_ADDRESS: {"order_id": run.pending, **address},
        RetailWrite.MODIFY_PENDING_ORDER_ITEMS: {"order_id": run.pending, **swap},
        RetailWrite.MODIFY_PENDING_ORDER_PAYMENT: {"order_id": run.pending, "payment_method_id": "gift_card_0000000"},
        RetailWrite.MODIFY_USER_ADDRESS: {"user_id": run.customer.subject, **address},
        RetailWrite.RETURN_DELIVERED_ORDER_ITEMS: {"order_id": run.pending, "item_ids": [], "payment_method_id": "x"},
        RetailWrite.EXCHANGE_DELIVERED_ORDER_ITEMS: {"order_id": run.pending, **swap},
    }
    return samples[write]


RETAIL_CHECKS: tuple[RetailCheck, ...] = (
    retail_tool_list,
    retail_identity_scoping,
    retail_default_deny,
    retail_proposal_exact,
    retail_confirmation_required,
    retail_confirmation_of_another_proposal,
    retail_executes_once,
)

"""The scenarios scripts/record_histories.py records: what the customer and the reviewers do with each
case, on which stack, under which rule. Each list names (scenario, applicant, question, language, what is
done with the waiting case, approval TTL); run as part of the recording script, never on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from case_client import CaseHandle
from case_client._conversation import MessageRefused, new_message_id, send_message, wait_reply
from contracts.action_policy import ActionKind, ActionRule
from contracts.case import CaseStatus, CaseView, Decision, ReviewDecision
from contracts.conversation import CustomerMessage
from contracts.credentials import SignedReview, approval_claims, sign
from contracts.directory import ConversationPolicy
from contracts.errors import AuthorizationError
from contracts.knowledge import Language
from contracts.names import REVIEW
from contracts.passkey import ReviewStatement, encode_passkey_approval, passkey_approval_from_browser, review_challenge
from devstack.software_authenticator import SoftwareAuthenticator
from keystore import (
    demo_identity,
    directory_location,
    load_directory,
    load_private_key,
    private_key_path,
    reviewer_kid,
    write_directory,
)
from keystore.directory_edit import add_passkey, set_action, set_escalation
from keystore.signers import KeyFileSigner

PASSKEY_RP_ID, PASSKEY_ORIGIN = "localhost", "http://localhost:8090"
CHEN_PASSKEY = SoftwareAuthenticator(PASSKEY_RP_ID, PASSKEY_ORIGIN)
"""chen's passkey for the ``passkey_approved_refund`` scenario: the software authenticator (a test
double with real P-256 keys and WebAuthn byte layouts), enrolled in the stack's directory before any
case starts, as the reviewer console would enrol it."""

Action = Callable[[CaseHandle, CaseView, KeyFileSigner], Awaitable[None]]
"""What a reviewer (or an impostor) does with a waiting case; ``signer`` signs as each reviewer."""


def signed(
    signer: KeyFileSigner, case: CaseHandle, view: CaseView, decision: Decision, reviewer: str = "chen"
) -> SignedReview:
    """``reviewer``'s own signed decision on the case's proposal."""
    assert view.digest is not None
    return signer.signed_review(
        demo_identity(reviewer), case_id=case.case_id, digest=view.digest, decision=decision.value
    )


def review(decision: Decision, reviewer: str = "chen") -> Action:
    async def act(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
        await case.signal_review(signed(signer, case, view, decision, reviewer))

    return act


async def refused_then_approved(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """A malformed signal, a refused update (a review that only names a reviewer: it fails), then the
    signed approval by update."""
    assert view.digest is not None
    await case.workflow.signal(REVIEW, {"reviewer": "chen", "digest": view.digest, "decision": "approved"})
    with contextlib.suppress(AuthorizationError):
        await case.review(ReviewDecision(reviewer="bob", digest=view.digest, decision=Decision.APPROVE))
    await case.review(signed(signer, case, view, Decision.APPROVE))


async def forged_then_approved(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """mei's key signing as chen (a bad signature, by signal), mei's own approval (another tenant, by
    update: it fails), then chen's own signed approval."""
    assert view.digest is not None
    claims = approval_claims(
        demo_identity("chen"),
        case_id=case.case_id,
        digest=view.digest,
        decision="approve",
        now=datetime.now(UTC),
        jti=uuid.uuid4().hex,
    )
    mei_key = load_private_key(private_key_path(signer.state_dir, reviewer_kid("mei")))
    await case.signal_review(SignedReview(approval_token=sign(claims, mei_key, kid=reviewer_kid("chen"))))
    with contextlib.suppress(AuthorizationError):
        await case.review(signed(signer, case, view, Decision.APPROVE, reviewer="mei"))
    await case.review(signed(signer, case, view, Decision.APPROVE))


async def flood_then_approve(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """Malformed review signals until the case continues as new, then the signed approval."""
    first_run = (await case.workflow.describe()).run_id
    malformed = {"reviewer": "chen", "digest": view.digest, "decision": "approved", "note": 1}
    for _ in range(200):
        await case.workflow.signal(REVIEW, malformed)
        if (await case.workflow.describe()).run_id != first_run:
            break
        await asyncio.sleep(0.05)
    else:
        raise RuntimeError("the case never continued as new")
    await review(Decision.APPROVE)(case, view, signer)


def passkey_review(case: CaseHandle, view: CaseView, *, signed_for: str | None = None) -> SignedReview:
    """chen's passkey approval of the case's proposal; with ``signed_for`` the browser signed a
    statement for that case id, then the statement was relabelled to this case."""
    assert view.digest is not None
    statement = ReviewStatement(
        case_id=signed_for or case.case_id,
        digest=view.digest,
        decision="approve",
        reviewer="chen",
        nonce=secrets.token_urlsafe(16),
        issued_at=int(time.time()),
    )
    credential = CHEN_PASSKEY.assert_(review_challenge(statement))
    carried = statement.model_copy(update={"case_id": case.case_id})
    return SignedReview(approval_token=encode_passkey_approval(passkey_approval_from_browser(carried, credential)))


async def passkey_then_approved(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """A passkey assertion signed for another case and relabelled to this one (refused by signal), then
    chen's passkey approval of this proposal by update."""
    await case.signal_review(passkey_review(case, view, signed_for=f"rec-{uuid.uuid4().hex[:8]}"))
    await case.review(passkey_review(case, view))


def enrol_chen_passkey(state_dir: Path) -> None:
    """Publish :data:`CHEN_PASSKEY` for chen in the stack's directory (the worker and its commerce server read it)."""
    path = Path(directory_location(state_dir, {}))  # the stack's worker reads its own state dir's
    write_directory(path, add_passkey(load_directory(str(path)), "chen", CHEN_PASSKEY.passkey_record()))


# --- conversations (release 0.11 on): what the customer writes after the first message -------------

IDLE_TENANT_HOURS = 0.0005
"""The idle limit (1.8 s) the recording stack gives tenant ``south``, so ``conversation_idle_closed``
records a case closing for want of an answer without waiting 24 hours."""


async def say(case: CaseHandle, signer: KeyFileSigner, text: str, *, who: str = "alice") -> int:
    token = signer.applicant_token(demo_identity(who), case.case_id)
    accepted = await send_message(case.workflow, CustomerMessage(text=text, token=token, message_id=new_message_id()))
    return accepted.turn


async def asks_then_approved(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """The service asked for the order: another customer's message is refused, the order is given, the
    proposal waits, the customer asks for news (answered by code), chen approves."""
    assert view.status is CaseStatus.WAITING_CUSTOMER, view.status
    with contextlib.suppress(MessageRefused):
        await say(case, signer, "It is QH-1001", who="bob")
    turn = await say(case, signer, "It is order QH-1001")
    await wait_reply(case.workflow, turn, wait_seconds=30)
    waiting = await case.wait_for(lambda v: v.status is CaseStatus.WAITING_APPROVAL, timeout=60, poll_seconds=0.2)
    news = await say(case, signer, "any news?")
    await wait_reply(case.workflow, news, wait_seconds=30)
    assert waiting.digest is not None
    await case.review(signed(signer, case, waiting, Decision.APPROVE))


async def withdrawn(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """The customer withdraws, while the service waits for them or while the proposal waits."""
    await say(case, signer, "withdraw")


async def many_messages_then_approved(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """Twenty-four status questions while the proposal waits (the case continues as new past twenty
    messages in a run), then chen approves in the last run."""
    assert view.status is CaseStatus.WAITING_APPROVAL and view.digest is not None, view.status
    for n in range(24):
        turn = await say(case, signer, f"any news? ({n + 2})")
        await wait_reply(case.workflow, turn, wait_seconds=30)
    await case.review(signed(signer, case, view, Decision.APPROVE))


async def idle(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """Nobody answers: the case closes at its tenant's idle limit."""
    assert view.status is CaseStatus.WAITING_CUSTOMER, view.status


def hasten_idle_close(state_dir: Path, tenant: str) -> None:
    """Give ``tenant`` an idle limit of :data:`IDLE_TENANT_HOURS` in the stack's directory."""
    path = Path(directory_location(state_dir, {}))
    directory = load_directory(str(path))
    policy = ConversationPolicy(idle_hours=IDLE_TENANT_HOURS)
    tenants = [t.model_copy(update={"conversation": policy}) if t.tenant == tenant else t for t in directory.tenants]
    write_directory(path, directory.model_copy(update={"tenants": tenants}))


# --- actions (release 0.12 on): a case proposes a cancellation the customer confirms -------------------


async def say_yes_signed(case: CaseHandle, signer: KeyFileSigner, who: str) -> int:
    """The customer's "yes" with the confirmation their sign-in signs over the waiting action's digest."""
    view = await case.status()
    assert view.action is not None, view.status
    identity = demo_identity(who)
    message = CustomerMessage(
        text="yes",
        token=signer.applicant_token(identity, case.case_id),
        message_id=new_message_id(),
        confirmation=signer.confirmation_token(identity, case_id=case.case_id, digest=view.action.digest),
    )
    return (await send_message(case.workflow, message)).turn


async def confirmed(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """alice's confirmation of another proposal (refused), "yes" in words alone (answered by code: it agrees
    to nothing), then her signed "yes": the rule asks nobody else, so the cancellation executes."""
    assert view.status is CaseStatus.WAITING_APPROVAL and view.action is not None, view.status
    identity = demo_identity("alice")
    wrong = CustomerMessage(
        text="yes",
        token=signer.applicant_token(identity, case.case_id),
        message_id=new_message_id(),
        confirmation=signer.confirmation_token(identity, case_id=case.case_id, digest="0" * 64),
    )
    with contextlib.suppress(MessageRefused):
        await send_message(case.workflow, wrong)
    words = await say(case, signer, "yes")
    await wait_reply(case.workflow, words, wait_seconds=30)
    await say_yes_signed(case, signer, "alice")


async def confirmed_and_approved(case: CaseHandle, view: CaseView, signer: KeyFileSigner) -> None:
    """alice's signed "yes", then chen's approval of the action's digest (qinghe's rule asks for both)."""
    turn = await say_yes_signed(case, signer, "alice")
    await wait_reply(case.workflow, turn, wait_seconds=30)
    await case.review(signed(signer, case, view, Decision.APPROVE))


def allow_action(state_dir: Path, kind: ActionKind, reviewers: int, escalation: str | None) -> None:
    """qinghe allows ``kind`` with the customer's confirmation and ``reviewers`` reviewers' approvals, and
    asks ``escalation`` (a reviewer) when a proposal nears its expiry undecided."""
    path = Path(directory_location(state_dir, {}))
    rule = ActionRule(reviewers=reviewers, max_per_customer_per_day=2)
    directory = set_action(load_directory(str(path)), "qinghe", kind, rule)
    write_directory(path, set_escalation(directory, "qinghe", escalation))


SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    # name, applicant, question, language, what a reviewer does, approval TTL. One commerce database
    # serves them all, so each refund that is paid names an order no earlier scenario paid.
    (
        "approved_refund",
        "alice",
        "Please refund QH-1001 and explain the amount and the policy",
        Language.EN,
        review(Decision.APPROVE),
        900,
    ),
    ("rejected_refund", "alice", "Please refund QH-1002", Language.EN, review(Decision.REJECT), 900),
    ("expired_refund", "alice", "Please refund QH-1009", Language.EN, None, 2),
    (
        "answered_delivery",
        "alice",
        "Where is my order QH-1005? Can I still change the delivery address?",
        Language.EN,
        None,
        900,
    ),
    ("needs_human_uncovered", "alice", "Do you offer lunar teleportation for my parcels?", Language.EN, None, 900),
    ("foreign_order_then_withdrawn", "alice", "Please refund QH-2001", Language.EN, withdrawn, 900),
    ("refused_then_approved", "alice", "Please refund QH-1002", Language.EN, refused_then_approved, 900),
    ("zh_order_beside_chinese", "bob", "请退款QH-2002并给出依据", Language.ZH, review(Decision.APPROVE), 900),
    ("review_flood", "alice", "Please refund QH-1009", Language.EN, flood_then_approve, 900),
    ("forged_then_approved", "bob", "Please refund QH-2001", Language.EN, forged_then_approved, 900),
    ("action_not_allowed", "alice", "Please cancel my order QH-1006", Language.EN, None, 900),
]
CONVERSATION_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("conversation_asks_then_approved", "alice", "I want a refund for my lamp", Language.EN, asks_then_approved, 900),
    ("conversation_withdrawn", "alice", "Please refund QH-1002", Language.EN, withdrawn, 900),
    ("conversation_many_messages", "alice", "Please refund QH-1009", Language.EN, many_messages_then_approved, 900),
    ("conversation_idle_closed", "lin", "I want a refund for my lamp", Language.EN, idle, 900),
]
"""Recorded on a stack of their own (a fresh commerce database) whose tenant ``south`` closes a case
after :data:`IDLE_TENANT_HOURS` without a message (release 0.11 on)."""
PASSKEY_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("passkey_approved_refund", "alice", "Please refund QH-1001", Language.EN, passkey_then_approved, 900),
]
"""Recorded on a stack of their own (a fresh commerce database: the scenarios above pay every refundable
order of the fixture), with chen's passkey enrolled before the case starts."""
ACTION_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("action_cancel_confirmed", "alice", "Please cancel my order QH-1006", Language.EN, confirmed, 900),
    ("action_cancel_expired", "bob", "Please cancel my order QH-2006", Language.EN, None, 2),
]
REVIEWED_ACTION_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("action_cancel_approved", "alice", "Please cancel my order QH-1006", Language.EN, confirmed_and_approved, 900),
]
ESCALATED_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("action_escalated_then_expired", "bob", "Please cancel my order QH-2006", Language.EN, None, 9),
    ("refund_escalated_then_expired", "alice", "Please refund QH-1009", Language.EN, None, 9),
]
NEW_ADDRESS = "to: Li Lei (fictional), +86 21 5555 0199, 8 River Road, Shanghai, 200000, CN"
ADDRESS_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("action_address_confirmed", "alice", f"Please send my order QH-1006 {NEW_ADDRESS}", Language.EN, confirmed, 900),
]
RETURN_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    (
        "action_return_approved",
        "alice",
        "I want to return QH-1004, the desk stand is too small.",
        Language.EN,
        confirmed_and_approved,
        900,
    ),
]
NEAR_EXPIRY_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("action_noted_near_expiry_then_expired", "bob", "Please cancel my order QH-2006", Language.EN, None, 9),
    ("refund_noted_near_expiry_then_expired", "alice", "Please refund QH-1009", Language.EN, None, 9),
]
EXCHANGE_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("action_exchange_confirmed", "alice", "Please exchange QH-1004 for DESK-09", Language.EN, confirmed, 900),
    (
        "action_exchange_variant_needed",
        "alice",
        "Please exchange QH-1004 for the large one",
        Language.EN,
        withdrawn,
        900,
    ),
]
DEFAULT_ADDRESS_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    (
        "action_default_address_confirmed",
        "alice",
        f"Please change my default address {NEW_ADDRESS}",
        Language.EN,
        confirmed,
        900,
    ),
]
REFUND_ACTION_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("refund_as_action_approved", "alice", "Please refund QH-1001", Language.EN, confirmed_and_approved, 900),
]
CLOSED_ACTION_SCENARIOS: list[tuple[str, str, str, Language, Action | None, int]] = [
    ("action_withdrawn_closed", "alice", "Please cancel my order QH-1006", Language.EN, withdrawn, 900),
]
ACTION_STACKS = {
    "actions": (ActionKind.CANCEL_ORDER, 0, None, ACTION_SCENARIOS),
    "reviewed-actions": (ActionKind.CANCEL_ORDER, 1, None, REVIEWED_ACTION_SCENARIOS),
    "escalations": (ActionKind.CANCEL_ORDER, 1, "chen", ESCALATED_SCENARIOS),
    "addresses": (ActionKind.CHANGE_ORDER_ADDRESS, 0, None, ADDRESS_SCENARIOS),
    "returns": (ActionKind.RETURN_ITEMS, 1, None, RETURN_SCENARIOS),
    "exchanges": (ActionKind.EXCHANGE_ITEMS, 0, None, EXCHANGE_SCENARIOS),
    "near-expiry": (ActionKind.CANCEL_ORDER, 1, None, NEAR_EXPIRY_SCENARIOS),
    "default-addresses": (ActionKind.CHANGE_DEFAULT_ADDRESS, 0, None, DEFAULT_ADDRESS_SCENARIOS),
    "refund-actions": (ActionKind.REFUND_ORDER, 1, None, REFUND_ACTION_SCENARIOS),
    "closed-actions": (ActionKind.CANCEL_ORDER, 0, None, CLOSED_ACTION_SCENARIOS),
}
"""Each list recorded on a stack of its own whose directory allows qinghe one action (release 0.12 on): a
cancellation with the customer's confirmation alone, then with a reviewer's approval too, then with chen
asked as a proposal nears its expiry (each escalated at 6 s, closed undecided at 9 s); an address change
the customer confirms; a return the customer confirms and chen approves; an exchange the customer confirms,
and one whose message names no product code (the case asks for one; the customer withdraws); a
cancellation and a refund in a tenant naming no escalation reviewer, noted as they near their expiry (at
6 s) and closed undecided (at 9 s); a change of the account's default address the customer confirms (no
order); a refund through ``refund_order`` the customer confirms and chen approves; a cancellation the
customer withdraws, closed at the commerce server. The main stack's
directory allows none: there ``action_not_allowed`` asks nothing of the commerce server, and a refund takes
its own proposal."""
PARTIAL = (
    "escalations",
    "addresses",
    "returns",
    "exchanges",
    "near-expiry",
    "default-addresses",
    "refund-actions",
    "closed-actions",
)
"""Stacks ``--only`` records alone: shapes added to 0.12 after its first generation (2026-12-issue48)."""
UNVERIFIED = ("applicant_unverified", "alice", "Please refund QH-1001")
"""A case started without an applicant token: it must read nothing and end with the reason."""

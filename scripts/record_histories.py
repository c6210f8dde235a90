"""Add workflow histories of the current code to tests/histories/<release>/ for the replay test.

    .venv/bin/python scripts/record_histories.py --tag 2027-01 [--release v0.2]

Starts a throwaway Temporal dev server and an in-process worker (rehearsal model, fresh commerce
database), runs one case per scenario and writes each finished run's history as
``<release>/<scenario>-<tag>.json``. The release defaults to the newest one in
tests/histories/releases.json whose commit is null (the current code); a release named by a commit is
past code and is refused. Histories are a contract with every case in flight: existing files are
never overwritten (the script refuses, exit 2), re-recorded or deleted; a new tag adds a new
generation next to the old ones, so CI replays every version of the workflow that may still have
cases running, each against its release's code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from case_client import CaseClient, CaseHandle
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
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack
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

HISTORIES = Path(__file__).resolve().parents[1] / "tests" / "histories"
MANIFEST = HISTORIES / "releases.json"
REFUSED = 2
SUGGEST_CONTINUE_AS_NEW_AFTER_EVENTS = 150
"""The dev server suggests continue-as-new after this many history events (``limit.historyCount.
suggestContinueAsNew``), so the ``review_flood`` scenario records a case that continues as new under a
flood of malformed review signals without megabytes of payload; both of its runs are written."""

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
ACTION_STACKS = {
    "actions": (ActionKind.CANCEL_ORDER, 0, None, ACTION_SCENARIOS),
    "reviewed-actions": (ActionKind.CANCEL_ORDER, 1, None, REVIEWED_ACTION_SCENARIOS),
    "escalations": (ActionKind.CANCEL_ORDER, 1, "chen", ESCALATED_SCENARIOS),
    "addresses": (ActionKind.CHANGE_ORDER_ADDRESS, 0, None, ADDRESS_SCENARIOS),
}
PARTIAL = ("escalations", "addresses")
"""Stacks ``--only`` records alone: shapes added to 0.12 after its first generation (2026-12-issue48)."""
"""Each list recorded on a stack of its own whose directory allows qinghe's cancellations (release 0.12 on):
with the customer's confirmation alone, then with a reviewer's approval too, then with chen asked as a
proposal nears its expiry (each escalated at 6 s, closed undecided at 9 s). The main stack's directory
allows none: there ``action_not_allowed`` asks nothing of the commerce server."""
UNVERIFIED = ("applicant_unverified", "alice", "Please refund QH-1001")
"""A case started without an applicant token: it must read nothing and end with the reason."""


def refuse(message: str) -> SystemExit:
    """One line on stderr, exit 2."""
    print(f"record_histories: {message}", file=sys.stderr)
    return SystemExit(REFUSED)


def release_folder(release: str | None) -> Path:
    """The folder of ``release`` (default: the newest with commit null), refusing past or unknown releases."""
    manifest: dict[str, dict[str, object]] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    current = [name for name, entry in manifest.items() if entry.get("commit") is None]
    name = release or (current[-1] if current else None)
    if name is None or name not in manifest:
        raise refuse(f"release {name!r} is not in {MANIFEST} (current code: {current or 'none'})")
    if name not in current:
        raise refuse(
            f"release {name} is commit {manifest[name]['commit']}, not the current code: record into {current}"
        )
    return HISTORIES / name


async def record(
    stack: RehearsalStack, tag: str, out: Path, scenarios: list[tuple[str, str, str, Language, Action | None, int]]
) -> None:
    client, cases = stack.client, stack.cases  # cases start with an applicant token signed by the stack's issuer
    unsigned = CaseClient.for_client(client, task_queue=stack.task_queue)  # no issuer: no applicant token
    for name, applicant, question, language, action, ttl in scenarios:
        starter = unsigned if name == UNVERIFIED[0] else cases
        case = await starter.start(
            demo_identity(applicant),
            question,
            language=language,
            ttl_seconds=ttl,
            case_id=f"rec-{uuid.uuid4().hex[:8]}",
        )
        if action is not None:
            view = await case.settled(timeout=120, poll_seconds=0.2)
            if view.status not in (CaseStatus.WAITING_APPROVAL, CaseStatus.WAITING_CUSTOMER):
                raise SystemExit(f"{name}: the case ended {view.status.value} ({view.reason}) instead of waiting")
            await action(case, view, stack.signer)
        result = await case.ended(timeout=120)
        workflow_id = case.workflow.id
        runs = [execution.run_id async for execution in client.list_workflows(f'WorkflowId="{workflow_id}"')]
        for index, run_id in enumerate(reversed(runs), start=1):
            history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            suffix = f"-run{index}" if len(runs) > 1 else ""
            path = out / f"{name}{suffix}-{tag}.json"
            if path.exists():
                raise refuse(f"{path} exists: histories are never overwritten; choose another --tag")
            path.write_text(history.to_json(), encoding="utf-8")
            print(f"{path.name}: {result.status.value} ({result.reason}), {len(history.events)} events")


async def record_actions(root: Path, tag: str, out: Path, names: tuple[str, ...], limits: dict[str, str]) -> None:
    """Each of the :data:`ACTION_STACKS` ``names`` on a stack of its own, qinghe allowing its action."""
    for name in names:
        kind, reviewers, escalation, scenarios = ACTION_STACKS[name]
        async with rehearsal_stack(root / name, dynamic_config=limits) as stack:
            allow_action(stack.state_dir, kind, reviewers, escalation)
            await record(stack, tag, out, scenarios)


async def main(tag: str, out: Path, only: str | None = None) -> None:
    limits = {"limit.historyCount.suggestContinueAsNew": str(SUGGEST_CONTINUE_AS_NEW_AFTER_EVENTS)}
    if only is not None:
        with tempfile.TemporaryDirectory() as tmp:
            await record_actions(Path(tmp), tag, out, (only,), limits)
        return
    with tempfile.TemporaryDirectory() as tmp:
        async with rehearsal_stack(Path(tmp) / "main", dynamic_config=limits) as stack:
            await record(stack, tag, out, [*SCENARIOS, (*UNVERIFIED, Language.EN, None, 900)])
        async with rehearsal_stack(Path(tmp) / "conversations", dynamic_config=limits) as stack:
            hasten_idle_close(stack.state_dir, "south")
            await record(stack, tag, out, CONVERSATION_SCENARIOS)
        async with rehearsal_stack(Path(tmp) / "passkeys", dynamic_config=limits) as stack:
            enrol_chen_passkey(stack.state_dir)
            await record(stack, tag, out, PASSKEY_SCENARIOS)
        await record_actions(Path(tmp), tag, out, tuple(ACTION_STACKS), limits)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", required=True, help="a new generation name, e.g. 2027-01")
    parser.add_argument("--release", help="a release of tests/histories/releases.json (default: the current code's)")
    parser.add_argument("--only", choices=PARTIAL, help="record only these scenarios (a partial generation)")
    args = parser.parse_args()
    folder = release_folder(args.release)
    taken = sorted(path.name for path in folder.glob(f"*-{args.tag}.json"))
    if taken:
        raise refuse(
            f"{folder} already holds {len(taken)} history(ies) tagged {args.tag} ({taken[0]}): choose another --tag"
        )
    folder.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(args.tag, folder, args.only))

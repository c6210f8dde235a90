"""The audit's sections for a case that proposed an action (release 0.12): the proposal with its rule and
recomputed digest, the confirmations the customer's messages carried, and the execution with its
receipt. Read from the history alone and shown as claimed: ``starter.py verify`` checks the signatures."""

from __future__ import annotations

from case_history.audit import CaseAudit
from case_history.trail import unverified_claims
from cli.text_layout import clean, stamp, wrap
from contracts.actions import ActionReceipt


def action_lines(audit: CaseAudit) -> list[str]:
    """The action's sections, a blank line between them."""
    lines: list[str] = []
    for part in action_sections(audit):
        lines += [*([""] if lines else []), *part]
    return lines


def action_sections(audit: CaseAudit) -> list[list[str]]:
    action = audit.action
    execution = action.execution
    request = execution.request.value if execution is not None else None
    proposal = request.proposal if request is not None else action.proposal
    if proposal is None:
        return [["action proposal: none readable"]]
    effect, rule, requires = proposal.effect, proposal.rule, proposal.requires
    moved = (
        f"{effect.status_before} -> {effect.status_after}"
        if effect.order_id is not None
        else f"default address, account v{effect.account_version}"
    )
    change = (
        f"{proposal.kind.value} of {effect.target} for {proposal.customer} ({proposal.tenant}): "
        f"{moved}, {effect.refund_cents} {effect.currency} cents back"
    )
    if effect.invoice_void:
        change += ", invoice void"
    needs = ["the customer's confirmation"] if requires.customer else []
    needs += [f"{requires.reviewers} reviewer(s)"] if requires.reviewers else []
    recomputed = proposal.computed_digest()
    same = "the same" if recomputed == proposal.digest else f"DIFFERENT from the stated {clean(proposal.digest)}"
    lines = ["action proposal", *wrap(change)]
    lines += wrap(f"rule applied: {rule.model_dump_json()}; needs {' and '.join(needs) or 'nobody'}")
    lines += wrap(f"{proposal.proposal_id}, created {stamp(proposal.created_at)}, expires {stamp(proposal.expires_at)}")
    lines += [f"  digest (sha-256 of the proposal; recomputed here: {same})", f"    {recomputed}"]
    sections = [lines]
    confirmations = [f"confirmations: {len(action.confirmations)} sent with the customer's messages (claimed)"]
    for token in action.confirmations:
        claims = unverified_claims(token) or {}
        confirmations += wrap(
            f"{clean(str(claims.get('sub')))} for case {clean(str(claims.get('case_id')))}, digest "
            f"{clean(str(claims.get('digest')))[:16]}…, token id {clean(str(claims.get('jti')))}"
        )
    sections.append(confirmations)
    if execution is None:
        sections.append(["execution: none (nothing was executed)"])
        return sections
    done = [f"execution: {execution.outcome}"]
    if request is not None:
        done += wrap(
            f"asked to execute {proposal.proposal_id} under key {clean(request.idempotency_key)} with "
            f"{'a' if request.confirmation_token else 'no'} confirmation and {len(request.approval_tokens)} "
            "approval(s)"
        )
    receipt = execution.receipt.value
    if receipt is not None:
        done += wrap(
            f"receipt {receipt.receipt_id}: {receipt.kind.value} of {receipt.target}, {receipt.refund_cents} "
            f"{receipt.currency} cents back, {_version_after(receipt)}, agreed by "
            f"{', '.join(receipt.agreed_by) or 'the rule alone'}, at {stamp(receipt.executed_at)}, SIMULATED"
            f"{' (a replay)' if receipt.replay else ''}"
        )
        done.append("  receipt signature: signed as the commerce server (claimed, unverified)")
    elif execution.receipt.problem:
        done += wrap(f"the receipt does not decode: {clean(execution.receipt.problem)}")
    sections.append(done)
    return sections


def _version_after(receipt: ActionReceipt) -> str:
    if receipt.order_id is None:
        return f"account v{receipt.account_version_after}"
    return f"order v{receipt.order_version_after}"

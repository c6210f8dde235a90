"""Patch ids of ``SupportCaseWorkflow``: every change of workflow logic since the first recorded history.

A case that started before a change replays its old branch (``workflow.patched`` is False for it);
new cases take the new one. Histories in ``tests/histories/`` are never re-recorded, so each id
here stays until no case that started without it can still be running, and then a
``workflow.deprecate_patch`` step comes first.
"""

from __future__ import annotations

from temporalio import workflow

ORDER_IDS_BESIDE_CJK = "order-ids-beside-cjk"
"""An order id glued to Chinese text (``请退款QH-1001并``) counts as named in the question."""

REFUSED_REVIEW_UPDATE_FAILS = "refused-review-update-fails"
"""A refused ``review`` update fails (after the refusal is recorded) instead of returning accepted=False."""

CONTINUE_AS_NEW_WHILE_WAITING = "continue-as-new-while-waiting"
"""A case waiting for a reviewer continues as new when Temporal suggests it (a flood of review attempts)."""

CONFIGURATION_FAILS_CASE = "configuration-fails-case"
"""A tool or settlement activity that fails with a configuration error (a commerce server refusing this
worker's token) ends the case ``failed`` with the reason, instead of being shown to the model as an
unavailable tool or leaving the settlement unconfirmed."""

SIGNED_CREDENTIALS = "signed-credentials"
"""The applicant's signed token is verified (by an activity, recorded) before the case reads anything,
and only a reviewer-signed approval token decides a proposal; a review that only names a reviewer is
refused. Cases started before it keep the name-based rules they started with."""

CASE_METADATA = "case-metadata"
"""The case's memo carries the pending proposal (amount, order, digest, expiry) and, after settlement,
the receipt, so that ``temporal workflow describe`` and the Web UI show them without a worker. (The
step summaries and current details need no patch: neither is a command that replay compares.)"""

FAILED_MODEL_CALLS_COUNTED = "failed-model-calls-counted"
"""A model request whose reply was refused still names the model and counts the tokens the provider
reported (from the failure's details), so a case whose every reply failed never says "not yet called"."""

SHORT_STEPS_LOCAL = "short-steps-local"
"""The short steps run as local activities (one ``MarkerRecorded`` event inside the running workflow
task instead of three activity events and a new workflow task each): the applicant check and the
read-only investigation tools. Model calls, the settlement and the case record (whose input is the
case log an auditor reads from the history) stay regular activities.

A case that takes it decides some later patches at once, before its first local activity (see
:data:`DECIDED_BEFORE_LOCAL_STEPS`): a ``workflow.patched`` first called in the code that runs right
after a local activity resolved is not replayable when the worker recorded the resolution and that
code in two workflow tasks (it happens, e.g. when a query arrives while the local activity runs): on
replay that code runs in the first task, before the next task's patch marker is known, so ``patched``
answers False where the history holds the marker (a nondeterminism error)."""

CARRIED_STATE_FROM_CONTINUE_AS_NEW_ONLY = "carried-state-from-continue-as-new-only"
"""A run resumes a waiting case's carried state only when Temporal continued it from an earlier run of
the same workflow id; a run a client started with a ``carried`` input fails at once (``case_input_refused``).
Asked only in a run that would be refused, so a case that is never refused records no marker."""

PROPOSAL_CLOSED_AT_COMMERCE = "proposal-closed-at-commerce"
"""A proposal that was rejected or expired is closed at the commerce server (``close_refund_proposal``),
which from then on refuses every approval of that case, whatever token it carries."""

ORDER_IDS_ANY_CASE = "order-ids-any-case"
"""``qh-1001`` in a question names QH-1001: the ids in the question are found in either case and
compared upper-cased with the plan's (never an id absent from the question)."""

EFFECT_CARD_FACTS = "effect-card-facts"
"""The proposal's card (status query, case record, result, Web UI current details) also shows the invoice
total beside the refund, the warehouse receipt the rule requires and, once decided, who decided, how
(signed token, update or signal) and when. Decided when the proposal is made (after a regular activity)
and carried across continue-as-new; a case that started before it keeps the card it showed."""

DECIDED_BEFORE_LOCAL_STEPS = (ORDER_IDS_BESIDE_CJK, CONFIGURATION_FAILS_CASE, ORDER_IDS_ANY_CASE)
"""The patches whose first ``workflow.patched`` can come right after a local activity resolves (before
the workflow next waits for a regular activity, a timer or a condition): the plan's order-id rule
(after the applicant check) and a tool's configuration failure. A case with ``short-steps-local``
decides them right after it. A later patch that may be first asked there goes here too; the others
(case metadata, failed model calls, refused updates, continue-as-new) are first asked after a regular
activity or while waiting, and each decided patch costs a marker and a search-attribute upsert."""


def decide_before_local_steps() -> None:
    """Under ``short-steps-local``, decide the patches of :data:`DECIDED_BEFORE_LOCAL_STEPS` now, before
    any local activity runs (why: :data:`SHORT_STEPS_LOCAL`). A case that started before it decides
    nothing here. Workflow code."""
    if workflow.patched(SHORT_STEPS_LOCAL):
        for patch_id in DECIDED_BEFORE_LOCAL_STEPS:
            workflow.patched(patch_id)

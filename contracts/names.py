"""Every name that crosses a boundary, defined once.

Temporal finds a workflow, an activity, a signal, an update or a query by its name, and the case
record and the ``events`` query carry event kinds and stop reasons as text. Each side imports the
name from here, so a rename is one edit and a typo is an import error instead of a silent miss.
The search-attribute keys live beside these in :mod:`contracts.search_attributes`.
"""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum
from typing import Literal, cast

TASK_QUEUE = "support-cases"
DEPLOYMENT_NAME = "qinghe-support"
"""The Worker Deployment every case worker runs as (a version of it: ``case_client.deployment``)."""
WORKFLOW_NAME = "SupportCaseWorkflow"
WORKFLOW_ID_PREFIX = "case-"
"""A case's workflow id is ``case-<case id>``."""
REVIEW = "review"
"""The review signal and the review update share this name (two channels, one decision)."""


class ActivityName(StrEnum):
    VERIFY_APPLICANT = "verify_applicant"
    CONFIRM_CONTINUED_RUN = "confirm_continued_run"
    READ_CASE_DIRECTORY = "read_case_directory"
    PLAN_CASE = "plan_case"
    INVESTIGATE_TURN = "investigate_turn"
    COMPOSE_ANSWER = "compose_answer"
    REVIEW_ANSWER = "review_answer"
    RUN_INVESTIGATION_TOOL = "run_investigation_tool"
    VERIFY_CUSTOMER_MESSAGE = "verify_customer_message"
    EXECUTE_REFUND = "execute_refund"
    CLOSE_REFUND_PROPOSAL = "close_refund_proposal"
    PREVIEW_ACTION = "preview_action"
    EXECUTE_ACTION = "execute_action"
    CLOSE_ACTION_PROPOSAL = "close_action_proposal"
    WRITE_CASE_RECORD = "write_case_record"


def tool_activity_id(call_id: str) -> str:
    """The activity id of a tool call run as a local activity: it names the model's call id (whose text
    is the model's, unbounded) by a digest, so that a history reader can pair a marker with its call
    even when the activity failed and no observation came back."""
    return "tool-" + hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:16]


class QueryName(StrEnum):
    STATUS = "status"
    PROPOSAL = "proposal"
    EVENTS = "events"
    BUDGETS = "budgets"


class EventKind(StrEnum):
    """The kinds of :class:`contracts.case.CaseEvent`, in the order a case usually meets them."""

    CASE_STARTED = "case_started"
    APPLICANT_VERIFIED = "applicant_verified"
    PLANNED = "planned"
    TOOL_REFUSED = "tool_refused"
    TOOL_RAN = "tool_ran"
    TOOL_FAILED = "tool_failed"
    INVESTIGATION_DONE = "investigation_done"
    MODEL_FAILED = "model_failed"
    DRAFTED = "drafted"
    DRAFT_REFUSED = "draft_refused"
    REVIEWED = "reviewed"
    DELIVER_GATE = "deliver_gate"
    PROPOSAL_CREATED = "proposal_created"
    ACTION_PROPOSED = "action_proposed"
    """The commerce server computed an action's proposal and the workflow's gate admitted it: the rule
    that applied, who must agree, the digest and the expiry."""
    ACTION_REFUSED = "action_refused"
    CONFIRMATION_ACCEPTED = "confirmation_accepted"
    CONFIRMATION_REFUSED = "confirmation_refused"
    DIRECTORY_READ = "directory_read"
    REVIEW_REFUSED = "review_refused"
    REVIEW_ACCEPTED = "review_accepted"
    ESCALATED = "escalated"
    NEAR_EXPIRY = "near_expiry"
    """A pending proposal neared its expiry undecided in a tenant that names no escalation reviewer."""
    """The pending proposal neared its expiry undecided: the tenant's escalation reviewer was asked."""
    CONTINUED_AS_NEW = "continued_as_new"
    PROPOSAL_CLOSED = "proposal_closed"
    PROPOSAL_CLOSE_FAILED = "proposal_close_failed"
    SETTLEMENT_FAILED = "settlement_failed"
    SETTLED = "settled"
    ACTION_EXECUTED = "action_executed"
    RECORD_WRITE_FAILED = "record_write_failed"
    EVENTS_DROPPED = "events_dropped"
    MESSAGE_ACCEPTED = "message_accepted"
    MESSAGE_REFUSED = "message_refused"
    REPLY_SENT = "reply_sent"
    WAITING_FOR_CUSTOMER = "waiting_for_customer"
    WITHDRAWN = "withdrawn"
    IDLE_CLOSED = "idle_closed"
    CASE_FINISHED = "case_finished"


class StopCode(StrEnum):
    """Why a case ended (``CaseView.reason``): a code, optionally followed by ``:detail``."""

    # delivered or settled
    ANSWERED = "answered"
    REFUND_SETTLED = "refund_settled"
    ACTION_EXECUTED = "action_executed"
    # the customer must say more
    ONE_ORDER_PER_CASE = "one_order_per_case"
    MORE_INPUT_NEEDED = "more_input_needed"
    ADDRESS_NEEDED = "address_needed"
    """An address change whose message states no new address in the form the host reads."""
    VARIANT_NEEDED = "variant_needed"
    """An exchange whose message names no one product code of the variant wanted."""
    REVIEW_INSUFFICIENT_EVIDENCE = "review_insufficient_evidence"
    # a person takes over
    PLAN_NAMES_ORDER_NOT_IN_QUESTION = "plan_names_order_not_in_question"
    TURN_BUDGET_EXHAUSTED = "turn_budget_exhausted"
    TOOL_BUDGET_EXHAUSTED = "tool_budget_exhausted"
    MODEL_BUDGET_EXHAUSTED = "model_budget_exhausted"
    MODEL_CONTRACT = "model_contract"
    MODEL_UNAVAILABLE = "model_unavailable"
    DRAFT_REFUSED = "draft_refused"
    REVIEW_FAILED_AFTER_REWRITE = "review_failed_after_rewrite"
    CITATION_NOT_IN_CONTEXT = "citation_not_in_context"
    DUPLICATE_CITATIONS = "duplicate_citations"
    ANSWER_CLAIMS_PAYMENT_WITHOUT_RECEIPT = "answer_claims_payment_without_receipt"
    HANDOFF_REQUESTED = "handoff_requested"
    UNCITED_ANSWER = "uncited_answer"
    PROPOSAL_WITHOUT_REFUND_REQUEST = "proposal_without_refund_request"
    PROPOSAL_WITHOUT_QUOTE = "proposal_without_quote"
    QUOTE_NOT_ELIGIBLE = "quote_not_eligible"
    MISSING_POLICY_CITATIONS = "missing_policy_citations"
    ACTION_WITHOUT_REQUEST = "action_without_request"
    """The draft proposes an action the plan does not ask for (no action intent, or no request)."""
    ACTION_NOT_ALLOWED = "action_not_allowed"
    """The tenant's policy, as the case's directory records it, names no rule for the action (default deny)."""
    ACTION_REFUSED = "action_refused"
    """The commerce server refused to propose the action (``:code``): not eligible, a cap, default deny."""
    ACTION_PROPOSAL_INVALID = "action_proposal_invalid"
    """The commerce server's proposal is not the one asked for (another order, customer or rule)."""
    SETTLEMENT_REFUSED = "settlement_refused"
    SETTLEMENT_UNCONFIRMED = "settlement_unconfirmed"
    # the conversation
    CUSTOMER_IDLE = "customer_idle"
    CUSTOMER_WITHDREW = "customer_withdrew"
    CONVERSATION_TURN_LIMIT = "conversation_turn_limit"
    # a reviewer or the clock decided
    REJECTED = "rejected"
    PROPOSAL_EXPIRED_WITHOUT_DECISION = "proposal_expired_without_decision"
    ACTION_EXPIRED_WITHOUT_AGREEMENT = "action_expired_without_agreement"
    # the applicant's credential did not verify: the case read nothing
    APPLICANT_UNVERIFIED = "applicant_unverified"
    # the service is misconfigured
    MODEL_CONFIGURATION = "model_configuration"
    TOOL_CONFIGURATION = "tool_configuration"
    SETTLEMENT_CONFIGURATION = "settlement_configuration"
    # the one outcome that lets a case go on to wait for a reviewer
    PROPOSAL_ADMITTED = "proposal_admitted"


def stop_reason(code: StopCode, detail: str | None = None) -> str:
    """The one format of a stop reason: ``code`` or ``code:detail``."""
    return f"{code.value}:{detail}" if detail else code.value


def stop_code(reason: str) -> str:
    """The code part of a stop reason (what dashboards group by)."""
    return reason.split(":", 1)[0]


class ReviewRefusal(StrEnum):
    """Why a review was refused (the update's failure type is ``review_refused``, its message this code)."""

    MALFORMED_REVIEW = "malformed_review"
    MALFORMED_PAYLOAD = "malformed_payload"
    """A review payload that does not decode as a review (counted and logged; its event says why)."""
    CASE_NOT_WAITING_FOR_REVIEW = "case_not_waiting_for_review"
    ALREADY_DECIDED = "already_decided"
    UNKNOWN_REVIEWER = "unknown_reviewer"
    APPLICANT_CANNOT_REVIEW = "applicant_cannot_review"
    NOT_A_REVIEWER = "not_a_reviewer"
    REVIEWER_OF_ANOTHER_TENANT = "reviewer_of_another_tenant"
    DIGEST_MISMATCH = "digest_mismatch"
    PROPOSAL_EXPIRED = "proposal_expired"
    SIGNATURE_REQUIRED = "signature_required"
    """A review that names a reviewer instead of carrying one's signed approval."""
    APPROVAL_REUSED = "approval_reused"
    """An approval token already presented to this case."""
    REVIEWER_ALREADY_APPROVED = "reviewer_already_approved"
    """A second approval by a reviewer whose approval the case already holds (four-eyes needs two people)."""
    DIRECTORY_UNAVAILABLE = "directory_unavailable"
    """The directory could not be read when the review arrived, so nothing could judge it."""


REVIEW_REFUSED = "review_refused"
"""The ``ApplicationError`` type of a refused review update."""
MESSAGE_REFUSED = "message_refused"
"""The ``ApplicationError`` type of a refused customer message (:class:`contracts.conversation.MessageRefusal`)."""


class CaseInputRefusal(StrEnum):
    """Why a run refused its start input (the run fails with type ``case_input_refused``, reading nothing)."""

    MALFORMED = "case_input_malformed"
    CARRIED_STATE_NOT_CONTINUED = "carried_state_not_continued"
    """A client started a run with a waiting case's carried state: only continue-as-new may carry it."""
    CARRIED_STATE_OF_ANOTHER_CASE = "carried_state_of_another_case"
    CARRIED_STATE_NOT_WAITING = "carried_state_not_waiting"
    """A carried state that is not a case waiting, undecided, for its reviewer: no run ever carries one."""
    CRON_SCHEDULE = "cron_schedule_refused"
    """A case is one request, never a schedule: a run with a cron schedule refuses any input."""


CASE_INPUT_REFUSED = "case_input_refused"
"""The ``ApplicationError`` type of a run that refused its start input."""
CASE_RESUMING = "case_resuming"
"""A query that reached a run before Temporal confirmed the state it resumes: ask again (a review waits)."""


RequestKind = Literal["plan", "investigate", "compose", "review"]
"""The four kinds of model request. Every system prompt opens with its marker, ``[kind: plan]``: a
real model reads it as a heading, the rehearsal model dispatches on it."""
REQUEST_KINDS: tuple[RequestKind, ...] = ("plan", "investigate", "compose", "review")
_KIND_MARKER = re.compile(r"^\[kind: (plan|investigate|compose|review)\]")


def kind_marker(kind: RequestKind) -> str:
    return f"[kind: {kind}]"


def kind_of(system_text: str) -> RequestKind | None:
    """The request kind named by a system prompt's marker line, or None without a marker."""
    match = _KIND_MARKER.match(system_text)
    return cast(RequestKind, match.group(1)) if match else None


def workflow_id(case_id: str) -> str:
    """The workflow id of a case (a workflow id is returned as it is)."""
    return case_id if case_id.startswith(WORKFLOW_ID_PREFIX) else f"{WORKFLOW_ID_PREFIX}{case_id}"


def case_id_of(workflow_id_: str) -> str:
    return workflow_id_.removeprefix(WORKFLOW_ID_PREFIX)

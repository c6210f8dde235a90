"""The codes of the case client's failures, and of a wait for a case that ended without it settling."""

from __future__ import annotations

from enum import StrEnum


class ClientErrorCode(StrEnum):
    # Temporal and the deployment
    TEMPORAL_UNAVAILABLE = "temporal_unavailable"
    TEMPORAL_BUSY = "temporal_busy"
    TEMPORAL_CONFIG = "temporal_config"
    TEMPORAL_TLS_FILE = "temporal_tls_file"
    NAMESPACE_UNKNOWN = "namespace_unknown"
    BUILD_ID = "build_id"
    DEPLOYMENT_NOT_CURRENT = "deployment_not_current"
    # a case
    CASE_NOT_FOUND = "case_not_found"
    CASE_NOT_ACCESSIBLE = "case_not_accessible"
    CASE_NOT_AVAILABLE = "case_not_available"
    CASE_NOT_WAITING = "case_not_waiting"
    CASE_CLOSED = "case_closed"
    REQUEST_KEY_REUSED = "request_key_reused"
    REVIEW_REFUSED = "review_refused"
    WAIT_TIMEOUT = "wait_timeout"
    # a conversation
    MESSAGE_REFUSED = "message_refused"
    CONVERSATION_REFUSED = "conversation_refused"
    CONVERSATION_NOT_STARTED = "conversation_not_started"
    CONVERSATION_UNREACHABLE = "conversation_unreachable"
    CASE_BEFORE_CONVERSATIONS = "case_before_conversations"
    # what the caller asked
    INVALID_QUESTION = "invalid_question"
    INVALID_TTL = "invalid_ttl"
    INVALID_RETRY_WINDOW = "invalid_retry_window"
    INVALID_REQUEST_KEY = "invalid_request_key"


class WaitCode(StrEnum):
    """How a wait for a case ended without the case settling (all transient: exit 5, try again)."""

    WORKER_UNAVAILABLE = "worker_unavailable"
    """No worker polls the case's task queue (or the one listed has stopped): the case waits for one."""
    WORKER_BUSY = "worker_busy"
    """A worker is there but did not answer the status query before the deadline: it is busy."""
    COMMERCE_UNAVAILABLE = "commerce_unavailable"
    """The case retries a step because the merchant's commerce server does not answer."""
    CASE_WORKING = "case_still_working"
    """The case is working (a slow model server, say) and had not settled by the deadline."""

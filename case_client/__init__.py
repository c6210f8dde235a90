"""The client side of a case: connect, start, read and wait, for every caller (starter.py, eval, scripts).

Everything here talks to Temporal only; what a person sees is rendered by the caller.
"""

from case_client._cases import (
    CASE_NOT_ACCESSIBLE,
    TemporalTarget,
    case_handle,
    case_id_for,
    connect,
    live_poller_identities,
    may_see,
    read_case,
    require_worker,
    wait_until_ended,
    wait_until_settled,
    workflow_id,
)

__all__ = [
    "CASE_NOT_ACCESSIBLE",
    "TemporalTarget",
    "case_handle",
    "case_id_for",
    "connect",
    "live_poller_identities",
    "may_see",
    "read_case",
    "require_worker",
    "wait_until_ended",
    "wait_until_settled",
    "workflow_id",
]

"""The client side of a case, for every caller (starter.py, eval, scripts, benchmarks, tests).

:class:`CaseClient` connects through Temporal's environment configuration and starts, opens and
lists cases, and starts a conversation (:meth:`CaseClient.converse`); :class:`CaseHandle` reads, waits
for and reviews one, and carries its conversation on (``say``, ``reply``, ``conversation``,
``progress``). Everything here talks to Temporal only: what a person sees is rendered by
:mod:`cli.render`, and a fetched history is read by :mod:`case_history`.
"""

from case_client._client import ApplicantIssuer, CaseClient, CaseHandle
from case_client._codes import ClientErrorCode
from case_client._connection import TemporalTarget, connect, live_poller_identities
from case_client._conversation import MessageRefused, Progress, new_message_id
from case_client._following import CaseClosed
from case_client._reviewing import ReviewRefused
from case_client._rules import (
    CASE_NOT_ACCESSIBLE,
    DEFAULT_APPROVAL_TTL_SECONDS,
    CaseSummary,
    case_id_for,
    listing_query,
    may_list,
    may_see,
    new_case,
    retry_window_seconds,
)
from contracts.names import workflow_id

__all__ = [
    "CASE_NOT_ACCESSIBLE",
    "DEFAULT_APPROVAL_TTL_SECONDS",
    "ApplicantIssuer",
    "CaseClient",
    "CaseClosed",
    "CaseHandle",
    "CaseSummary",
    "ClientErrorCode",
    "MessageRefused",
    "Progress",
    "ReviewRefused",
    "TemporalTarget",
    "case_id_for",
    "connect",
    "listing_query",
    "live_poller_identities",
    "may_list",
    "may_see",
    "new_case",
    "new_message_id",
    "retry_window_seconds",
    "workflow_id",
]

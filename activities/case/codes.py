"""The stable codes of the case room's failures: the applicant's credential, the run's origin, the
case record and the reply-language preferences.

The values cross into Temporal in the activity's failure (or reach the command line, for the
preferences), so a value never changes; a new failure gets a new member.
"""

from __future__ import annotations

from enum import StrEnum


class CaseErrorCode(StrEnum):
    """Why a case's own read or write was refused."""

    APPLICANT_TOKEN_MISSING = "applicant_token_missing"
    TOKEN_FOR_ANOTHER_CASE = "token_for_another_case"
    DIRECTORY_APPLICANT_MISSING = "directory_applicant_missing"
    CASE_ID_REUSED = "case_id_reused"
    TEMPORAL_UNAVAILABLE = "temporal_unavailable"
    INVALID_CASE_ID = "invalid_case_id"
    CASE_RECORD_WRITE_FAILED = "case_record_write_failed"
    CONSENT_REQUIRED = "consent_required"
    PREFERENCES_UNREADABLE = "preferences_unreadable"

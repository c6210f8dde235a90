"""The codes of the command line's own refusals (what it relays keeps its room's code)."""

from __future__ import annotations

from enum import StrEnum


class CliErrorCode(StrEnum):
    INVALID_ARGUMENTS = "invalid_arguments"
    INVALID_SINCE = "invalid_since"
    DIGEST_MISSING = "digest_missing"
    INVALID_DIGEST = "invalid_digest"
    OTHER_TENANT = "other_tenant"
    HISTORY_OF_ANOTHER_CASE = "history_of_another_case"
    INVALID_MESSAGE = "invalid_message"

"""The codes of the reviewer console's own failures (a refused credential is a
:class:`contracts.approval_claims.CredentialCode`)."""

from __future__ import annotations

from enum import StrEnum


class ConsoleErrorCode(StrEnum):
    CONSOLE_ORIGIN_INVALID = "console_origin_invalid"
    CONSOLE_ORIGIN_INSECURE = "console_origin_insecure"
    DIRECTORY_NOT_WRITABLE = "directory_not_writable"
    DIRECTORY_EDIT_REFUSED = "directory_edit_refused"

"""The codes of the dev stack's failures: a local server that did not start, a tool that is missing."""

from __future__ import annotations

from enum import StrEnum


class DevStackErrorCode(StrEnum):
    """A server that did not start is named by its code (``dev_server``, or the module it runs) and
    ``_exited`` or ``_timeout``: every server the stack starts has both here."""

    DEV_SERVER_EXITED = "dev_server_exited"
    DEV_SERVER_TIMEOUT = "dev_server_timeout"
    CODEC_SERVER_EXITED = "codec_server_exited"
    CODEC_SERVER_TIMEOUT = "codec_server_timeout"
    REVIEWER_CONSOLE_EXITED = "reviewer_console_exited"
    REVIEWER_CONSOLE_TIMEOUT = "reviewer_console_timeout"
    CUSTOMER_CHANNEL_EXITED = "customer_channel_exited"
    CUSTOMER_CHANNEL_TIMEOUT = "customer_channel_timeout"
    CODEC_ENDPOINT = "codec_endpoint"
    TEMPORAL_CLI_NOT_FOUND = "temporal_cli_not_found"

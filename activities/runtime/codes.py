"""The stable codes of a worker's refusal to start: the checks it runs before it polls.

The worker prints the code in its one-line refusal (and exits 2), so a value never changes.
"""

from __future__ import annotations

from enum import StrEnum


class StartupErrorCode(StrEnum):
    """Why a worker refused to start."""

    SEARCH_ATTRIBUTES_MISSING = "search_attributes_missing"
    SEARCH_ATTRIBUTE_TYPE = "search_attribute_type"
    ANOTHER_LEDGER = "another_ledger"
    DIRECTORY_INSECURE = "directory_insecure"
    DIRECTORY_WITHOUT_ISSUER = "directory_without_issuer"
    METRICS_BIND_FAILED = "metrics_bind_failed"

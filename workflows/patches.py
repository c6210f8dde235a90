"""Patch ids of ``SupportCaseWorkflow``: every change of workflow logic since the first recorded history.

A case that started before a change replays its old branch (``workflow.patched`` is False for it);
new cases take the new one. Histories in ``tests/histories/`` are never re-recorded, so each id
here stays until no case that started without it can still be running, and then a
``workflow.deprecate_patch`` step comes first.
"""

from __future__ import annotations

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

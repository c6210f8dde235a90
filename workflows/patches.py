"""Retired patch ids of ``SupportCaseWorkflow``: a record, never to be reused.

Release 0.1 guarded each change of workflow logic with a Temporal patch of one of these ids. Release 0.2 runs
under Worker Versioning with the pinned behaviour: a case started on 0.1 finishes on 0.1 workers, so
0.2's workflow code has no patch branches and takes what a new 0.1 case took everywhere. These ids
are retired with release 0.2. A 0.1 history holds their markers, so a later change must never
patch with one of them again (a replay would take the new branch for an old marker): a future patch
takes a new id. Nothing imports this module from ``workflows/``.
"""

from __future__ import annotations

ORDER_IDS_BESIDE_CJK = "order-ids-beside-cjk"
REFUSED_REVIEW_UPDATE_FAILS = "refused-review-update-fails"
CONTINUE_AS_NEW_WHILE_WAITING = "continue-as-new-while-waiting"
CONFIGURATION_FAILS_CASE = "configuration-fails-case"
SIGNED_CREDENTIALS = "signed-credentials"
CASE_METADATA = "case-metadata"
FAILED_MODEL_CALLS_COUNTED = "failed-model-calls-counted"
SHORT_STEPS_LOCAL = "short-steps-local"
CARRIED_STATE_FROM_CONTINUE_AS_NEW_ONLY = "carried-state-from-continue-as-new-only"
PROPOSAL_CLOSED_AT_COMMERCE = "proposal-closed-at-commerce"
ORDER_IDS_ANY_CASE = "order-ids-any-case"
EFFECT_CARD_FACTS = "effect-card-facts"

RETIRED_WITH_RELEASE_0_2 = (
    ORDER_IDS_BESIDE_CJK,
    REFUSED_REVIEW_UPDATE_FAILS,
    CONTINUE_AS_NEW_WHILE_WAITING,
    CONFIGURATION_FAILS_CASE,
    SIGNED_CREDENTIALS,
    CASE_METADATA,
    FAILED_MODEL_CALLS_COUNTED,
    SHORT_STEPS_LOCAL,
    CARRIED_STATE_FROM_CONTINUE_AS_NEW_ONLY,
    PROPOSAL_CLOSED_AT_COMMERCE,
    ORDER_IDS_ANY_CASE,
    EFFECT_CARD_FACTS,
)
"""Every patch id release 0.1 recorded, in the order the patches were added."""

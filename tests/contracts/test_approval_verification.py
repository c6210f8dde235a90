"""The one approval verifier (contracts/approval_verification.py): one call, one verified value back,
and a typed refusal that says whether the signature held (its signer is then proven)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from contracts.approval_claims import CredentialCode
from contracts.approval_verification import (
    ApprovalRefused,
    ApprovalTerms,
    VerifiedApproval,
    approval_meets,
    reviewer_still_counts,
    signed_approval,
    verify_approval,
)
from contracts.directory import Directory
from keystore import demo_identity
from keystore.directory_edit import remove_person
from tests.conftest import DemoKeys

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DIGEST = "d" * 64
ALICE = demo_identity("alice")
TERMS = ApprovalTerms(case_id="case-1", digest=DIGEST, applicant=ALICE, proposal_expires_at=NOW + timedelta(minutes=15))


def _token(demo_keys: DemoKeys, reviewer: str = "chen", *, at: datetime = NOW, **claims: str) -> str:
    fields = {"case_id": "case-1", "digest": DIGEST, "decision": "approve"} | claims
    return demo_keys.signer.approval_token(demo_identity(reviewer), now=at, **fields)


def _refused(call: object) -> ApprovalRefused:
    assert callable(call)
    with pytest.raises(ApprovalRefused) as caught:
        call()
    return caught.value


def test_one_call_returns_the_verified_approval(demo_keys: DemoKeys) -> None:
    token = _token(demo_keys)
    verified = verify_approval(token, TERMS, demo_keys.directory(), now=NOW + timedelta(minutes=1))
    assert isinstance(verified, VerifiedApproval)
    assert (verified.token, verified.reviewer, verified.claims.decision) == (token, "chen", "approve")
    assert verified.token_id == verified.claims.jti


def test_the_two_steps_are_the_one_call(demo_keys: DemoKeys) -> None:
    directory, token = demo_keys.directory(), _token(demo_keys)
    signed = signed_approval(token, directory)
    assert approval_meets(signed, TERMS, directory, now=NOW) == verify_approval(token, TERMS, directory, now=NOW)


@pytest.mark.parametrize("token", ["", "chen", "passkey1.!!", "a.b.c", "x" * 5000])
def test_a_signature_that_does_not_hold_names_no_signer(demo_keys: DemoKeys, token: str) -> None:
    refused = _refused(lambda: verify_approval(token, TERMS, demo_keys.directory(), now=NOW))
    assert refused.signer is None and refused.code == CredentialCode.MALFORMED_TOKEN


def test_a_term_that_fails_names_the_proven_signer(demo_keys: DemoKeys) -> None:
    directory = demo_keys.directory()
    cases = {
        CredentialCode.TOKEN_FOR_ANOTHER_CASE: (_token(demo_keys, case_id="case-2"), NOW),
        CredentialCode.DIGEST_MISMATCH: (_token(demo_keys, digest="e" * 64), NOW),
        CredentialCode.PROPOSAL_EXPIRED: (_token(demo_keys, at=TERMS.proposal_expires_at), NOW),
        CredentialCode.TOKEN_EXPIRED: (_token(demo_keys), NOW + timedelta(minutes=11)),
        CredentialCode.ISSUED_IN_FUTURE: (_token(demo_keys, at=NOW + timedelta(minutes=5)), NOW),
    }
    for code, (token, now) in cases.items():
        refused = _refused(lambda token=token, now=now: verify_approval(token, TERMS, directory, now=now))
        assert (refused.code, refused.signer) == (code, "chen"), code


def test_the_applicant_and_another_tenants_reviewer_are_refused(demo_keys: DemoKeys) -> None:
    directory = demo_keys.directory()
    mei = _refused(lambda: verify_approval(_token(demo_keys, "mei"), TERMS, directory, now=NOW))
    assert (mei.code, mei.signer) == (CredentialCode.REVIEWER_OF_ANOTHER_TENANT, "mei")
    chen_applies = replace(TERMS, applicant=demo_identity("chen"))
    chen = _refused(lambda: verify_approval(_token(demo_keys), chen_applies, directory, now=NOW))
    assert (chen.code, chen.signer) == (CredentialCode.APPLICANT_CANNOT_REVIEW, "chen")


def test_the_settle_window_replaces_the_tokens_expiry(demo_keys: DemoKeys) -> None:
    """The commerce server pays what was decided in time: within the window of the signing, even
    after the token expired; never later."""
    directory, token = demo_keys.directory(), _token(demo_keys)
    window = timedelta(minutes=30)
    late = NOW + timedelta(minutes=20)
    assert verify_approval(token, TERMS, directory, now=late, settle_window=window).reviewer == "chen"
    too_late = _refused(
        lambda: verify_approval(token, TERMS, directory, now=NOW + timedelta(minutes=31), settle_window=window)
    )
    assert too_late.code == CredentialCode.SETTLE_WINDOW_PASSED


def test_an_accepted_approval_stops_counting_once_its_reviewer_is_removed(demo_keys: DemoKeys) -> None:
    directory: Directory = demo_keys.directory()
    token = _token(demo_keys)
    assert reviewer_still_counts(token, directory, ALICE)
    assert not reviewer_still_counts(token, remove_person(directory, "chen"), ALICE)
    assert not reviewer_still_counts("garbage", directory, ALICE)

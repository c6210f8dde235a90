"""Signed credentials: what each token proves, and every way a forged or misused one is refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jwt
import pytest

from contracts.approval_verification import ApprovalTerms, verify_approval
from contracts.credentials import (
    ISSUER_KID,
    CredentialRefused,
    applicant_claims,
    approval_claims,
    sign,
    verify_applicant_token,
    verify_approval_token,
)
from contracts.directory import Directory
from keystore import (
    create_demo_directory,
    demo_identity,
    directory_location,
    load_directory,
    load_private_key,
    private_key_path,
    reviewer_kid,
)

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DIGEST = "d" * 64
ALICE, CHEN, MEI, BOB = (demo_identity(name) for name in ("alice", "chen", "mei", "bob"))


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("keys")
    create_demo_directory(directory)
    return directory


@pytest.fixture(scope="module")
def keys(state: Path) -> Directory:
    return load_directory(directory_location(state, {}))


def _approval(state: Path, *, signer: str = "chen", reviewer=CHEN, at: datetime = NOW, **overrides) -> str:
    claims = approval_claims(
        reviewer, case_id="case-1", digest=DIGEST, decision="approve", now=at, jti=uuid.uuid4().hex
    )
    return sign(
        claims | overrides, load_private_key(private_key_path(state, reviewer_kid(signer))), kid=reviewer_kid(signer)
    )


def _check(
    token: str, keys: Directory, *, now: datetime = NOW, expires: datetime = NOW + timedelta(minutes=15)
) -> None:
    terms = ApprovalTerms(case_id="case-1", digest=DIGEST, applicant=ALICE, proposal_expires_at=expires)
    verify_approval(token, terms, keys, now=now)


def test_a_reviewer_signed_approval_verifies(state: Path, keys: Directory) -> None:
    claims = verify_approval_token(_approval(state), keys)
    assert (claims.sub, claims.digest, claims.decision) == ("chen", DIGEST, "approve")
    _check(_approval(state), keys)


def _refusal(call) -> str:
    with pytest.raises(CredentialRefused) as caught:
        call()
    return caught.value.code


def test_forged_and_misused_approvals_are_refused(state: Path, keys: Directory) -> None:
    mei_claims_chen = sign(
        approval_claims(CHEN, case_id="case-1", digest=DIGEST, decision="approve", now=NOW, jti=uuid.uuid4().hex),
        load_private_key(private_key_path(state, reviewer_kid("mei"))),
        kid=reviewer_kid("chen"),
    )
    unsigned = jwt.encode(
        approval_claims(CHEN, case_id="case-1", digest=DIGEST, decision="approve", now=NOW, jti="j" * 16),
        "",
        algorithm="none",
    )
    cases = {
        "bad_signature": lambda: _check(mei_claims_chen, keys),
        "wrong_algorithm": lambda: _check(unsigned, keys),
        "malformed_token": lambda: _check("chen", keys),
        "token_for_another_case": lambda: _check(_approval(state, case_id="case-2"), keys),
        "digest_mismatch": lambda: _check(_approval(state, digest="e" * 64), keys),
        "token_expired": lambda: _check(_approval(state), keys, now=NOW + timedelta(minutes=11)),
        "proposal_expired": lambda: _check(_approval(state), keys, expires=NOW),
        "reviewer_of_another_tenant": lambda: _check(_approval(state, signer="mei", reviewer=MEI), keys),
        "wrong_signer": lambda: _check(_approval(state, signer="mei", reviewer=CHEN), keys),
    }
    assert {code: _refusal(call) for code, call in cases.items()} == {code: code for code in cases}


def test_a_customer_cannot_sign_an_approval(state: Path, keys: Directory) -> None:
    issuer = load_private_key(private_key_path(state, ISSUER_KID))
    as_bob = sign(
        approval_claims(BOB, case_id="case-1", digest=DIGEST, decision="approve", now=NOW, jti=uuid.uuid4().hex),
        issuer,
        kid=reviewer_kid("bob"),
    )
    assert _refusal(lambda: _check(as_bob, keys)) == "unknown_signer"


def test_applicant_tokens(state: Path, keys: Directory) -> None:
    issuer = load_private_key(private_key_path(state, ISSUER_KID))
    token = sign(applicant_claims(ALICE, case_id="case-1", now=NOW, jti=uuid.uuid4().hex), issuer, kid=ISSUER_KID)
    assert verify_applicant_token(token, keys, case_id="case-1", now=NOW) == ALICE
    assert _refusal(lambda: verify_applicant_token(token, keys, case_id="case-2", now=NOW)) == "token_for_another_case"
    late = NOW + timedelta(hours=1)
    assert _refusal(lambda: verify_applicant_token(token, keys, case_id="case-1", now=late)) == "token_expired"
    chen_signed = sign(
        applicant_claims(ALICE, case_id="case-1", now=NOW, jti=uuid.uuid4().hex),
        load_private_key(private_key_path(state, reviewer_kid("chen"))),
        kid=ISSUER_KID,
    )
    assert _refusal(lambda: verify_applicant_token(chen_signed, keys, case_id="case-1", now=NOW)) == "bad_signature"
    reviewer_as_applicant = sign(
        applicant_claims(CHEN, case_id="case-1", now=NOW, jti="j" * 16), issuer, kid=ISSUER_KID
    )
    assert _refusal(lambda: verify_applicant_token(reviewer_as_applicant, keys, case_id="case-1", now=NOW)) == (
        "unknown_applicant"
    )

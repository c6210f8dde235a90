"""Passkey approvals (contracts/passkey.py): enrollment, verification to approval claims, and every
refusal produced by the attack it stands for, with real P-256 assertions from the software
authenticator test double (devstack/software_authenticator.py)."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from contracts.approval_verification import ApprovalTerms, verify_approval
from contracts.credentials import (
    APPROVAL_TOKEN_TTL,
    ApprovalClaims,
    CredentialRefused,
    claimed_subject,
    verify_approval_token,
)
from contracts.directory import Directory, Passkey, Person
from contracts.identity import Role
from contracts.passkey import (
    PASSKEY_PREFIX,
    ReviewStatement,
    decode_passkey_approval,
    encode_passkey_approval,
    is_passkey_approval,
    passkey_approval_from_browser,
    review_challenge,
    verify_passkey_approval,
    verify_passkey_enrollment,
)
from contracts.refusals import refusal_sentence
from devstack.software_authenticator import SoftwareAuthenticator, b64url
from keystore import DEMO_DIRECTORY_PATH

RP_ID = "localhost"
ORIGIN = "http://localhost:8090"
CASE_ID = "case-passkey-1"
DIGEST = "ab" * 32
OTHER_DIGEST = "cd" * 32
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
ENROLLED = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def demo_directory() -> Directory:
    return Directory.model_validate_json(DEMO_DIRECTORY_PATH.read_text(encoding="utf-8"))


def directory_with(**passkeys: list[Passkey]) -> Directory:
    """The demo directory (chen reviews qinghe, mei reviews south) with these people's passkeys."""
    base = demo_directory()
    people = [person.model_copy(update={"passkeys": passkeys.get(person.subject, [])}) for person in base.people]
    return Directory(tenants=base.tenants, people=people, keys=base.keys)


def statement(**changes: Any) -> ReviewStatement:
    fields: dict[str, Any] = {
        "case_id": CASE_ID,
        "digest": DIGEST,
        "decision": "approve",
        "reviewer": "chen",
        "nonce": "bm9uY2Utbm9uY2Utbm9uY2U",
        "issued_at": int(NOW.timestamp()),
    }
    return ReviewStatement(**{**fields, **changes})


def approve(
    authenticator: SoftwareAuthenticator, signed: ReviewStatement, *, carried: ReviewStatement | None = None
) -> str:
    """The envelope of ``authenticator``'s assertion over ``signed``'s challenge, carrying ``carried``
    (``signed`` itself unless a test edits the statement after signing)."""
    credential = authenticator.assert_(review_challenge(signed))
    return encode_passkey_approval(passkey_approval_from_browser(carried or signed, credential))


def refusal(token: Any, directory: Directory) -> str:
    with pytest.raises(CredentialRefused) as refused:
        verify_approval_token(token, directory)
    assert refused.value.message, refused.value.code
    return refused.value.code


@pytest.fixture
def chen() -> SoftwareAuthenticator:
    return SoftwareAuthenticator(RP_ID, ORIGIN)


@pytest.fixture
def directory(chen: SoftwareAuthenticator) -> Directory:
    return directory_with(chen=[chen.passkey_record(enrolled_at=ENROLLED)])


# --- enrollment -----------------------------------------------------------------------------------


def test_enrollment_verifies_the_registration_to_the_passkey_the_directory_publishes(
    chen: SoftwareAuthenticator,
) -> None:
    challenge = b"enrollment-challenge-0123456789"
    created = chen.register(challenge, user_id=b"chen-user-handle")
    passkey = verify_passkey_enrollment(created, challenge=challenge, rp_id=RP_ID, origin=ORIGIN, now=ENROLLED)
    assert passkey == chen.passkey_record(enrolled_at=ENROLLED)
    assert verify_passkey_enrollment(json.dumps(created), challenge=challenge, rp_id=RP_ID, origin=ORIGIN, now=NOW) == (
        passkey.model_copy(update={"enrolled_at": NOW})
    )


@pytest.mark.parametrize("attack", ["other_challenge", "user_not_verified", "other_origin", "other_rp", "assertion"])
def test_an_enrollment_that_does_not_hold_is_refused_with_one_sentence(
    chen: SoftwareAuthenticator, attack: str
) -> None:
    challenge = b"enrollment-challenge-0123456789"
    expected = {"rp_id": RP_ID, "origin": ORIGIN}
    if attack == "user_not_verified":
        chen.user_verified = False
    if attack == "other_origin":
        expected["origin"] = "http://localhost:9999"
    if attack == "other_rp":
        expected["rp_id"] = "console.example"
    used = b"another-challenge-0123456789" if attack == "other_challenge" else challenge
    created = chen.assert_(used) if attack == "assertion" else chen.register(used, user_id=b"chen")
    with pytest.raises(CredentialRefused) as refused:
        verify_passkey_enrollment(created, challenge=challenge, now=NOW, **expected)
    assert refused.value.code == "enrollment_refused"
    assert refused.value.message.endswith(".") and "\n" not in refused.value.message


# --- a valid approval -----------------------------------------------------------------------------


def test_a_passkey_approval_verifies_to_the_reviewers_claims(chen: SoftwareAuthenticator, directory: Directory) -> None:
    signed = statement()
    token = approve(chen, signed)
    assert token.startswith(PASSKEY_PREFIX) and is_passkey_approval(token) and len(token) < 4000
    claims = verify_approval_token(token, directory)
    nonce_id = hashlib.sha256(f"{chen.credential_id_b64}:{signed.nonce}".encode()).hexdigest()[:40]
    assert claims == ApprovalClaims(
        sub="chen",
        tenant="qinghe",
        case_id=CASE_ID,
        digest=DIGEST,
        decision="approve",
        iat=signed.issued_at,
        exp=signed.issued_at + int(APPROVAL_TOKEN_TTL.total_seconds()),
        jti=f"passkey-{nonce_id}",
    )
    assert verify_passkey_approval(token, directory) == claims
    assert claimed_subject(token) == "chen"
    alice = demo_directory().identity("alice")
    terms = ApprovalTerms(
        case_id=CASE_ID, digest=DIGEST, applicant=alice, proposal_expires_at=NOW + timedelta(minutes=15)
    )
    assert verify_approval(token, terms, directory, now=NOW + timedelta(minutes=1)).claims == claims


def test_a_rejection_verifies_as_a_rejection(chen: SoftwareAuthenticator, directory: Directory) -> None:
    assert verify_approval_token(approve(chen, statement(decision="reject")), directory).decision == "reject"


def test_the_challenge_is_the_hash_of_the_canonical_statement() -> None:
    signed = statement()
    canonical = (
        '{"case_id":"case-passkey-1","decision":"approve","digest":"' + DIGEST + '","issued_at":'
        f'{signed.issued_at},"nonce":"bm9uY2Utbm9uY2Utbm9uY2U","reviewer":"chen"}}'
    )
    assert review_challenge(signed) == hashlib.sha256(b"support-review/1\n" + canonical.encode()).digest()


def test_the_user_handle_is_not_signed_so_editing_it_keeps_the_same_approval_id(
    chen: SoftwareAuthenticator, directory: Directory
) -> None:
    chen.register(b"enrollment-challenge-0123456789", user_id=b"chen-user-handle")
    original = decode_passkey_approval(approve(chen, statement()))
    assert original.user_handle == b64url(b"chen-user-handle")
    edited = encode_passkey_approval(original.model_copy(update={"user_handle": b64url(b"someone-else")}))
    assert (
        verify_approval_token(edited, directory).jti
        == verify_approval_token(encode_passkey_approval(original), directory).jti
    )


# --- attacks, each refused with its code ----------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        {"case_id": "case-passkey-2"},
        {"digest": OTHER_DIGEST},
        {"decision": "reject"},
        {"nonce": "YW5vdGhlci1ub25jZS12YWx1ZQ"},
        {"issued_at": int((NOW + timedelta(hours=1)).timestamp())},
    ],
)
def test_an_assertion_replayed_with_an_edited_statement_is_a_challenge_mismatch(
    chen: SoftwareAuthenticator, directory: Directory, edit: dict[str, Any]
) -> None:
    token = approve(chen, statement(), carried=statement(**edit))
    assert refusal(token, directory) == "passkey_challenge_mismatch"


def test_an_approval_for_another_case_or_proposal_is_refused_by_the_case_rules(
    chen: SoftwareAuthenticator, directory: Directory
) -> None:
    alice = demo_directory().identity("alice")
    terms = ApprovalTerms(
        case_id=CASE_ID, digest=DIGEST, applicant=alice, proposal_expires_at=NOW + timedelta(minutes=15)
    )
    for signed, code in [
        (statement(case_id="case-passkey-2"), "token_for_another_case"),
        (statement(digest=OTHER_DIGEST), "digest_mismatch"),
    ]:
        with pytest.raises(CredentialRefused) as refused:
            verify_approval(approve(chen, signed), terms, directory, now=NOW + timedelta(minutes=1))
        assert refused.value.code == code


@pytest.mark.parametrize(
    ("knob", "value", "code"),
    [
        ("user_verified", False, "passkey_user_not_verified"),
        ("user_present", False, "passkey_user_not_present"),
        ("origin", "http://localhost.evil.example:8090", "passkey_wrong_origin"),
        ("cross_origin", True, "passkey_wrong_origin"),
        ("rp_id", "evil.example", "passkey_wrong_rp"),
    ],
)
def test_an_assertion_the_authenticator_or_page_got_wrong_is_refused(
    chen: SoftwareAuthenticator, directory: Directory, knob: str, value: object, code: str
) -> None:
    setattr(chen, knob, value)
    token = approve(chen, statement())
    assert refusal(token, directory) == code
    assert refusal_sentence(code, reviewer="chen") != "the review was refused"


def test_a_credential_the_directory_does_not_list_is_an_unknown_signer(directory: Directory) -> None:
    stranger = SoftwareAuthenticator(RP_ID, ORIGIN)
    assert refusal(approve(stranger, statement()), directory) == "unknown_signer"


def test_another_reviewers_passkey_cannot_sign_as_chen(chen: SoftwareAuthenticator) -> None:
    mei = SoftwareAuthenticator(RP_ID, ORIGIN)
    directory = directory_with(chen=[chen.passkey_record()], mei=[mei.passkey_record()])
    assert refusal(approve(mei, statement(reviewer="chen")), directory) == "wrong_signer"
    assert verify_approval_token(approve(mei, statement(reviewer="mei")), directory).sub == "mei"


def test_a_key_that_is_not_the_enrolled_one_is_a_bad_signature(
    chen: SoftwareAuthenticator, directory: Directory
) -> None:
    impostor = SoftwareAuthenticator(RP_ID, ORIGIN)
    impostor.credential_id = chen.credential_id  # a clone of the id, not of the key
    assert refusal(approve(impostor, statement()), directory) == "bad_signature"


def test_a_registration_response_is_not_an_assertion(chen: SoftwareAuthenticator, directory: Directory) -> None:
    signed = statement()
    created = chen.register(review_challenge(signed), user_id=b"chen")["response"]
    approval = decode_passkey_approval(approve(chen, signed)).model_copy(
        update={"client_data_json": created["clientDataJSON"]}
    )
    assert refusal(encode_passkey_approval(approval), directory) == "malformed_token"


def test_a_passkey_whose_public_key_is_not_a_cose_key_refuses_and_never_raises(chen: SoftwareAuthenticator) -> None:
    broken = chen.passkey_record().model_copy(update={"public_key": b64url(b"not a key")})
    assert refusal(approve(chen, statement()), directory_with(chen=[broken])) == "malformed_token"


def _envelope(document: Any, *, separators: tuple[str, str] = (",", ":")) -> str:
    """A ``passkey1.`` envelope of any JSON ``document`` (compact, as the encoder writes it, by default)."""
    return PASSKEY_PREFIX + b64url(json.dumps(document, separators=separators).encode())


@pytest.mark.parametrize(
    "token",
    [
        PASSKEY_PREFIX,
        PASSKEY_PREFIX + "!!!",
        PASSKEY_PREFIX + "a",
        PASSKEY_PREFIX + "bm90IGpzb24",
        PASSKEY_PREFIX + "bm90IGpzb24=",
        _envelope([1, 2, 3]),
        _envelope({"statement": {}}),
        _envelope(None),
        PASSKEY_PREFIX + "A" * 5000,
        "passkey1" + "x" * 40,
        None,
        b"passkey1.abc",
        12,
    ],
)
def test_garbage_envelopes_are_refused_never_raised(directory: Directory, token: Any) -> None:
    assert refusal(token, directory) == "malformed_token"
    with pytest.raises(CredentialRefused):
        verify_passkey_approval(token, directory)


def test_an_envelope_with_an_extra_field_or_another_spelling_is_malformed(
    chen: SoftwareAuthenticator, directory: Directory
) -> None:
    token = approve(chen, statement())
    document = json.loads(base64.urlsafe_b64decode(token[len(PASSKEY_PREFIX) :] + "==="))
    assert _envelope(document) == token  # the harness writes what the encoder writes
    assert refusal(_envelope(document, separators=(", ", ": ")), directory) == "malformed_token"
    assert refusal(token + "=", directory) == "malformed_token"
    assert refusal(_envelope({**document, "admin": True}), directory) == "malformed_token"
    assert refusal(_envelope({**document, "statement": {**document["statement"], "x": 1}}), directory) == (
        "malformed_token"
    )


def test_every_single_bit_flip_of_the_envelope_is_refused(chen: SoftwareAuthenticator, directory: Directory) -> None:
    token = approve(chen, statement())
    assert decode_passkey_approval(token).user_handle is None  # the one unsigned field is absent here
    assert verify_approval_token(token, directory).sub == "chen"
    raw = base64.urlsafe_b64decode(token[len(PASSKEY_PREFIX) :] + "===")
    codes: set[str] = set()
    for index in range(len(raw)):
        for bit in range(8):
            flipped = bytearray(raw)
            flipped[index] ^= 1 << bit
            codes.add(refusal(PASSKEY_PREFIX + b64url(bytes(flipped)), directory))
    for index in range(len(token)):
        for replacement in "A_":
            if token[index] != replacement:
                codes.add(refusal(token[:index] + replacement + token[index + 1 :], directory))
    assert codes <= {
        "malformed_token",
        "passkey_challenge_mismatch",
        "bad_signature",
        "unknown_signer",
        "wrong_signer",
        "passkey_wrong_rp",
        "passkey_wrong_origin",
        "passkey_user_not_present",
        "passkey_user_not_verified",
    }, codes
    assert {"malformed_token", "passkey_challenge_mismatch", "bad_signature", "unknown_signer"} <= codes


def test_a_browser_credential_without_its_fields_is_malformed() -> None:
    credentials: list[dict[str, Any]] = [
        {},
        {"id": "x", "response": None},
        {"id": "AAAAAAAAAAAAAAAAAAAAAA", "type": "public-key"},
    ]
    for credential in credentials:
        with pytest.raises(CredentialRefused) as refused:
            passkey_approval_from_browser(statement(), credential)
        assert refused.value.code == "malformed_token"


def test_every_passkey_refusal_has_its_own_sentence() -> None:
    for code in [
        "passkey_challenge_mismatch",
        "passkey_wrong_origin",
        "passkey_wrong_rp",
        "passkey_user_not_verified",
        "passkey_user_not_present",
        "bad_signature",
        "malformed_token",
        "unknown_signer",
        "wrong_signer",
    ]:
        sentence = refusal_sentence(code, reviewer="chen")
        assert sentence != "the review was refused" and "\n" not in sentence, code


# --- the directory's passkeys ---------------------------------------------------------------------


def test_the_directory_finds_a_passkeys_holder_and_case_slices_keep_it(chen: SoftwareAuthenticator) -> None:
    passkey = chen.passkey_record()
    directory = directory_with(chen=[passkey])
    holder = directory.passkey_holder(passkey.credential_id)
    assert holder is not None and (holder[0].subject, holder[1]) == ("chen", passkey)
    assert directory.passkey_holder("A" * 43) is None
    sliced = directory.for_case("alice")
    assert sliced.passkey_holder(passkey.credential_id) == holder
    assert Directory.model_validate_json(sliced.model_dump_json()) == sliced


def test_the_directory_refuses_a_passkey_held_twice_or_by_a_customer(chen: SoftwareAuthenticator) -> None:
    passkey = chen.passkey_record()
    with pytest.raises(ValidationError, match=passkey.credential_id[:20]):
        directory_with(chen=[passkey], mei=[passkey])
    with pytest.raises(ValidationError, match=passkey.credential_id[:20]):
        directory_with(chen=[passkey, passkey])
    with pytest.raises(ValidationError, match="only a reviewer"):
        directory_with(alice=[passkey])
    assert Person(subject="chen", tenant="qinghe", role=Role.REVIEWER, display_name="Chen").passkeys == []

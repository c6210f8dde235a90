"""One sentence per review refusal code: what a refused reviewer is told, by every channel.

A refused ``review`` update fails with ``<code>: <sentence>`` (the SDK caller, the HTTP API the Web UI
uses and the Web UI's dialog all show that message), the starter prints it, and the code alone stays in
the failure's details for scripts. The sentences name the reviewer only as the token claims it: a claim
is shown so the reviewer can see which key was expected, never trusted.
"""

from __future__ import annotations

from contracts.names import CASE_INPUT_REFUSED, ReviewRefusal

_SENTENCES: dict[str, str] = {
    ReviewRefusal.MALFORMED_REVIEW: (
        'the payload is not a review; send {{"approval_token": "<token>"}} as `starter.py review-info CASE '
        "--approve` prints it"
    ),
    ReviewRefusal.CASE_NOT_WAITING_FOR_REVIEW: "the case is not waiting for a review",
    ReviewRefusal.ALREADY_DECIDED: "the proposal was already decided, and a decision is final",
    ReviewRefusal.UNKNOWN_REVIEWER: "{reviewer} is not a known reviewer",
    ReviewRefusal.APPLICANT_CANNOT_REVIEW: "the applicant cannot approve their own refund",
    ReviewRefusal.NOT_A_REVIEWER: "{reviewer} is not a reviewer",
    ReviewRefusal.REVIEWER_OF_ANOTHER_TENANT: "reviewer {reviewer} belongs to another tenant than the applicant",
    ReviewRefusal.DIGEST_MISMATCH: "the approval was signed for another proposal (its digest differs)",
    ReviewRefusal.PROPOSAL_EXPIRED: "the proposal expired before the approval was signed",
    ReviewRefusal.SIGNATURE_REQUIRED: (
        "a review must carry a reviewer's signed approval token; a reviewer's name proves nothing"
    ),
    ReviewRefusal.APPROVAL_REUSED: "this approval token was already presented to this case; sign a new one",
    ReviewRefusal.REVIEWER_ALREADY_APPROVED: (
        "reviewer {reviewer} already approved this proposal; the tenant's policy needs another reviewer"
    ),
    ReviewRefusal.DIRECTORY_UNAVAILABLE: (
        "the support directory could not be read to check the approval just now; nothing changed, send it again"
    ),
    "malformed_token": "the approval token is not a signed token",
    "wrong_algorithm": "the approval token is not signed with EdDSA (Ed25519)",
    "wrong_signer": "the approval token is signed with another key than reviewer {reviewer}'s",
    "unknown_signer": "the directory publishes no key for reviewer {reviewer}",
    "private_key_in_key_set": "the case's key set holds a private key, so no signature is accepted",
    "bad_signature": "the signature does not match reviewer {reviewer}'s published key",
    "malformed_claims": "the approval token lacks a required claim",
    "issued_in_future": "the approval token is dated in the future",
    "token_expired": "the approval token has expired; sign a new one",
    "token_for_another_case": "the approval token was signed for another case",
    "passkey_challenge_mismatch": (
        "the passkey signed another case, proposal, decision or nonce than this approval states; approve again"
    ),
    "passkey_wrong_origin": "the passkey was used on another page than the reviewer console it was enrolled at",
    "passkey_wrong_rp": "the passkey approval is for another relying party than the passkey was enrolled for",
    "passkey_user_not_verified": "the authenticator did not verify reviewer {reviewer} (PIN or biometric)",
    "passkey_user_not_present": "the authenticator did not see reviewer {reviewer} present",
    CASE_INPUT_REFUSED: "this run refused its start input and has ended; it takes no review",
}


def refusal_sentence(code: str, *, reviewer: str | None = None) -> str:
    """The sentence for ``code`` (a :class:`contracts.names.ReviewRefusal` or a credential check's code)."""
    template = _SENTENCES.get(code, "the review was refused")
    return template.format(reviewer=_shown(reviewer) if reviewer else "the signer")


def refusal_message(code: str, *, reviewer: str | None = None) -> str:
    """``<code>: <sentence>``: the message of a refused review update."""
    return f"{code}: {refusal_sentence(code, reviewer=reviewer)}"


def _shown(name: str) -> str:
    """A claimed name as one short printable word (it comes from whoever sent the review)."""
    text = "".join(ch if ch.isprintable() and not ch.isspace() else "?" for ch in name)
    return text if len(text) <= 40 else text[:39] + "…"


def refusal_codes() -> list[str]:
    """Every code with a sentence of its own (the console's translations are checked against these)."""
    return list(_SENTENCES)

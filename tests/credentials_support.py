"""The test suite's key holders: one set of demo keys per test process, and signing with them.

``use_test_keys()`` creates the keys (once) and points every reader at their public key set through
the environment, so in-process workers, spawned workers and spawned commerce servers all check
credentials against the same keys. The test process then signs as the login service (applicant
tokens) and as each reviewer (approvals), exactly as ``starter.py`` does from a state dir.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from commerce_server.tokens import DIRECTORY_ENV as COMMERCE_DIRECTORY_ENV
from commerce_server.tokens import SIGNING_KEY_ENV as COMMERCE_SIGNING_KEY_ENV
from contracts.case import Decision
from contracts.credentials import COMMERCE_KID, SignedReview, approval_claims, sign
from contracts.identity import Identity
from devstack.software_authenticator import SoftwareAuthenticator
from keystore import (
    DIRECTORY_ENV,
    create_demo_directory,
    demo_identity,
    directory_location,
    keys_dir,
    load_directory,
    load_private_key,
    private_key_path,
    reviewer_kid,
    write_directory,
)
from keystore.directory_edit import add_passkey
from keystore.signers import KeyFileSigner

CHEN_PASSKEY = SoftwareAuthenticator("localhost", "http://localhost:8090")
"""chen's passkey in the session's directory (the software authenticator test double), so that every
worker and commerce server of the session can verify his passkey approvals."""


@cache
def use_test_keys() -> KeyFileSigner:
    """The demo keys of this test process (created on first use) and their signer."""
    state = Path(tempfile.mkdtemp(prefix="support-test-keys-"))
    create_demo_directory(state)
    path = Path(directory_location(state, {}))
    write_directory(path, add_passkey(load_directory(str(path)), "chen", CHEN_PASSKEY.passkey_record()))
    os.environ[DIRECTORY_ENV] = directory_location(state, {})
    os.environ[COMMERCE_DIRECTORY_ENV] = directory_location(state, {})
    os.environ[COMMERCE_SIGNING_KEY_ENV] = str(private_key_path(state, COMMERCE_KID))
    return KeyFileSigner(state)


def applicant_token(identity: Identity, case_id: str) -> str:
    return use_test_keys().applicant_token(identity, case_id)


def signed_review(reviewer: str, case_id: str, digest: str, decision: Decision = Decision.APPROVE) -> SignedReview:
    """``reviewer``'s own signed decision on exactly this proposal."""
    return use_test_keys().signed_review(
        demo_identity(reviewer), case_id=case_id, digest=digest, decision=decision.value
    )


def install_signing_keys(state_dir: Path) -> None:
    """Give ``state_dir`` this process's issuer and reviewer private keys (0600, in a 0700 folder), so
    that ``starter.py --state-dir state_dir`` signs applicant tokens and approvals exactly as the tests
    do. Neither the commerce key nor the directory is copied: every reader already checks against the
    directory ``SUPPORT_DIRECTORY`` names."""
    source = use_test_keys().state_dir
    folder = keys_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    directory = load_directory(directory_location(source, {}))
    for kid in [str(key["kid"]) for key in directory.keys]:
        if kid != COMMERCE_KID and not private_key_path(state_dir, kid).exists():
            shutil.copy2(private_key_path(source, kid), private_key_path(state_dir, kid))


def forged_approval_token(
    claimed: str, signer_kid: str, case_id: str, digest: str, *, now: datetime | None = None
) -> str:
    """An approval of exactly this proposal that claims ``claimed`` as reviewer (kid
    ``reviewer:<claimed>``) but is signed with the key of ``signer_kid``: what a thief of that key, or
    someone impersonating ``claimed``, can produce. No workflow or commerce server may accept it."""
    signer = use_test_keys()
    claims = approval_claims(
        demo_identity(claimed),
        case_id=case_id,
        digest=digest,
        decision=Decision.APPROVE.value,
        now=now or datetime.now(UTC),
        jti=uuid.uuid4().hex,
    )
    key = load_private_key(private_key_path(signer.state_dir, signer_kid))
    return sign(claims, key, kid=reviewer_kid(claimed))

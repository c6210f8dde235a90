"""The applicant's credential, verified before a case reads anything.

The worker holds no private key: it reads the public key set (a JWKS file or https URL) and checks
the token the login service signed. The keys it used go back to the workflow with the verified
identity, so they are recorded in the history and every later check in the case (the reviewers'
approvals) uses exactly those keys, deterministically.
"""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio import activity

from contracts.credentials import ApplicantCheck, VerifiedApplicant, verify_applicant_token
from contracts.errors import AuthorizationError
from contracts.names import ActivityName, workflow_id
from keystore import load_public_keys


class CredentialActivities:
    def __init__(self, public_keys_location: str) -> None:
        self.public_keys_location = public_keys_location

    @activity.defn(name=ActivityName.VERIFY_APPLICANT)
    async def verify_applicant(self, check: ApplicantCheck) -> VerifiedApplicant:
        """The identity the applicant token proves for this case, now; refused (authorization) when
        there is no token or it does not verify, a configuration error when the keys cannot be read."""
        if not check.applicant_token:
            raise AuthorizationError("applicant_token_missing", "The case carries no applicant token.")
        if activity.info().workflow_id != workflow_id(check.case_id):
            raise AuthorizationError("token_for_another_case", "The token's case is not this workflow's case.")
        keys = load_public_keys(self.public_keys_location)
        identity = verify_applicant_token(check.applicant_token, keys, case_id=check.case_id, now=datetime.now(UTC))
        return VerifiedApplicant(identity=identity, public_keys=keys)

"""The applicant's credential, verified before a case reads anything.

The worker holds no private key: it reads the support directory (a JSON file or https URL,
``SUPPORT_DIRECTORY``) and checks the applicant token, signed by the built-in issuer or, where
``SUPPORT_APPLICANT_JWKS_URL`` names one, by an outside identity provider
(:mod:`keystore.outside_issuer`). Either way the token's subject and tenant must agree with a customer
of the directory. The slice of the directory that can decide the case goes back to the workflow with
the verified identity, so it is recorded in the history and every later check in the case (the
reviewers' approvals, the tenant's policy) uses exactly that record, deterministically.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from temporalio import activity

from activities.case.codes import CaseErrorCode
from activities.case.run_origin import refuse_an_earlier_use
from contracts.case_start import check_first_served
from contracts.conversation import MessageCheck, VerifiedSender
from contracts.credentials import ApplicantCheck, CaseDirectoryRequest, VerifiedApplicant, verify_applicant_token
from contracts.directory import Directory, DirectoryError
from contracts.errors import AuthorizationError, ConfigurationError
from contracts.names import ActivityName, workflow_id
from keystore.directory_file import DirectorySource
from keystore.outside_issuer import OutsideIssuer

BUILT_IN_ISSUER = "built-in"


class CredentialActivities:
    def __init__(self, directory: DirectorySource, outside_issuer: OutsideIssuer | None = None) -> None:
        self.directory = directory
        self.outside_issuer = outside_issuer

    @activity.defn(name=ActivityName.VERIFY_APPLICANT)
    async def verify_applicant(self, check: ApplicantCheck) -> VerifiedApplicant:
        """The identity the applicant token proves for this case as of its recorded start (``started_at``,
        :mod:`contracts.case_start`; else now); refused (authorization) when there is no token, it does
        not verify, the case waited unserved too long, or its case id had an earlier run
        (:func:`activities.case.run_origin.refuse_an_earlier_use`); a configuration error when the directory
        cannot be read."""
        if not check.applicant_token:
            raise AuthorizationError(CaseErrorCode.APPLICANT_TOKEN_MISSING, "The case carries no applicant token.")
        if activity.info().workflow_id != workflow_id(check.case_id):
            raise AuthorizationError(
                CaseErrorCode.TOKEN_FOR_ANOTHER_CASE, "The token's case is not this workflow's case."
            )
        directory = self.directory.current()
        now = datetime.now(UTC)
        if check.started_at is not None:
            check_first_served(check.started_at, now)
            now = check.started_at  # judged as of the case's recorded start: a queued case survives an outage
        if self.outside_issuer is not None:
            # the key set may be fetched over the network: off the event loop
            identity = await asyncio.to_thread(self.outside_issuer.verify, check.applicant_token, directory, now=now)
            issuer = self.outside_issuer.issuer
        else:
            identity = verify_applicant_token(check.applicant_token, directory, case_id=check.case_id, now=now)
            issuer = BUILT_IN_ISSUER
        if check.first_run_id and check.started_at is not None:
            await refuse_an_earlier_use(workflow_id(check.case_id), check.first_run_id, check.started_at)
        return VerifiedApplicant(identity=identity, directory=directory.for_case(identity.subject), issuer=issuer[:200])

    @activity.defn(name=ActivityName.VERIFY_CUSTOMER_MESSAGE)
    async def verify_customer_message(self, check: MessageCheck) -> VerifiedSender:
        """Who the credential of a further message proves, as of the moment Temporal accepted the message:
        an applicant token for this case, or the outside issuer's ID token. Refused (authorization, with
        the credential's code) when it does not verify; the workflow compares the identity with the
        case's customer."""
        if activity.info().workflow_id != workflow_id(check.case_id):
            raise AuthorizationError(
                CaseErrorCode.TOKEN_FOR_ANOTHER_CASE, "The token's case is not this workflow's case."
            )
        directory = self.directory.current()
        if self.outside_issuer is not None:
            identity = await asyncio.to_thread(self.outside_issuer.verify, check.token, directory, now=check.at)
            return VerifiedSender(identity=identity, issuer=self.outside_issuer.issuer[:200])
        identity = verify_applicant_token(check.token, directory, case_id=check.case_id, now=check.at)
        return VerifiedSender(identity=identity, issuer=BUILT_IN_ISSUER)

    @activity.defn(name=ActivityName.READ_CASE_DIRECTORY)
    async def read_case_directory(self, request: CaseDirectoryRequest) -> Directory:
        """The slice of the directory as it is now that can decide a case of ``request.applicant``: a
        review is judged against it when it arrives, so a passkey enrolled or a key rotated since the
        case started works, and a removed reviewer or a revoked key does not. A configuration error when
        the directory cannot be read, or no longer lists the applicant."""
        try:
            return self.directory.current().for_case(request.applicant)
        except DirectoryError as missing:
            raise ConfigurationError(CaseErrorCode.DIRECTORY_APPLICANT_MISSING, str(missing)[:200]) from None

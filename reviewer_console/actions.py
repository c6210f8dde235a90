"""The console's POST endpoints (JSON in, JSON out, each behind the CSRF check): the two halves of the
enrollment, sign-in and review ceremonies, and the enrollment page's claim of its link. Each answer is
``{"ok": ..., "message": one sentence}`` plus what the next step needs; a refusal never carries a stack
trace.
"""

from __future__ import annotations

import contextlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from case_client import ReviewRefused
from contracts.approval_claims import CredentialCode
from contracts.case import CaseStatus, Decision
from contracts.credentials import CredentialRefused, SignedReview
from contracts.directory import Directory, Passkey
from contracts.errors import AuthorizationError, ConfigurationError, SupportError
from contracts.names import ReviewRefusal
from contracts.passkey import (
    ReviewStatement,
    encode_passkey_approval,
    passkey_approval_from_browser,
    verify_passkey_enrollment,
)
from keystore.directory_edit import DirectoryEditError, add_passkey
from keystore.directory_file import load_directory, write_directory
from keystore.enrollment import EnrollmentClaims, enrolling_reviewer, verify_enrollment_token
from reviewer_console import ceremonies
from reviewer_console.codes import ConsoleErrorCode
from reviewer_console.console import Console, console_of
from reviewer_console.web import csrf_protected, now_utc, session_of, set_session_cookie
from reviewer_console.words import Text, Words, parse_language

LINK_USED = "This enrollment link was already used; ask for a new one (starter.py directory enroll)."
LINK_ELSEWHERE = (
    "This enrollment link was already opened in another browser session, and only that session may use it; "
    "nothing was enrolled. If that was not you, tell your support lead and ask for a new link "
    "(starter.py directory enroll)."
)
MAX_BODY_BYTES = 64 * 1024


def published_at_url(location: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*://", location, re.IGNORECASE) is not None


def directory_not_writable(location: str) -> str:
    return (
        f"The directory is published at {location}, which this console cannot write; "
        "publish the passkey where the directory is kept."
    )


def _answer(message: str, *, status_code: int = 200, ok: bool = False, **extra: Any) -> Response:
    return JSONResponse({"ok": ok, "message": message, **extra}, status_code=status_code)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        return {}
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def publish_passkey(location: str, subject: str, passkey: Passkey) -> Directory:
    """The directory file at ``location`` with ``passkey`` added to reviewer ``subject``, validated and
    written atomically (read again first: someone may have edited it since the console last did)."""
    if published_at_url(location):
        raise ConfigurationError(ConsoleErrorCode.DIRECTORY_NOT_WRITABLE, directory_not_writable(location))
    directory = load_directory(location)
    person = enrolling_reviewer(directory, subject)
    try:
        edited = add_passkey(directory, person.subject, passkey)
    except DirectoryEditError as error:
        raise ConfigurationError(ConsoleErrorCode.DIRECTORY_EDIT_REFUSED, str(error)) from None
    write_directory(Path(location), edited)
    return edited


def _enrollment(console: Console, request: Request, body: dict[str, Any]) -> EnrollmentClaims:
    """The claims of the link whose token ``body`` carries, unused, and claimed by this request's browser
    session: the first session that presents a link claims it, any other is refused
    (:data:`LINK_ELSEWHERE`), so a copy of the link enrolls nothing."""
    token = body.get("token")
    now = now_utc()
    claims = verify_enrollment_token(token if isinstance(token, str) else "", console.directory.current(), now=now)
    if console.store.enrollment_used(claims.jti):
        raise CredentialRefused(CredentialCode.ENROLLMENT_USED, LINK_USED)
    expires_at = datetime.fromtimestamp(claims.exp, UTC)
    session_hash = session_of(request).session_hash
    if not console.store.claim_enrollment(claims.jti, session_hash=session_hash, expires_at=expires_at, now=now):
        raise CredentialRefused(CredentialCode.ENROLLMENT_ELSEWHERE, LINK_ELSEWHERE)
    return claims


def _enrollment_refused(error: SupportError) -> Response:
    """A refused enrollment step: 403 when another browser session holds the link, 400 otherwise."""
    return _answer(error.message, status_code=403 if error.code == CredentialCode.ENROLLMENT_ELSEWHERE else 400)


@csrf_protected
async def enroll_claim_endpoint(request: Request) -> Response:
    """The enrollment page's first POST: its script sends the token from the link's fragment (never in
    a URL), and this browser session claims the link; the answer names the reviewer it enrolls."""
    console = console_of(request)
    try:
        claims = _enrollment(console, request, await _body(request))
    except SupportError as error:
        return _enrollment_refused(error)
    if published_at_url(console.directory.location):
        return _answer(directory_not_writable(console.directory.location), status_code=409)
    return _answer(f"This link enrolls a passkey for {claims.sub}.", ok=True, subject=claims.sub)


@csrf_protected
async def enroll_options_endpoint(request: Request) -> Response:
    console = console_of(request)
    try:
        claims = _enrollment(console, request, await _body(request))
        if published_at_url(console.directory.location):
            return _answer(directory_not_writable(console.directory.location), status_code=409)
        person = enrolling_reviewer(console.directory.current(), claims.sub)
    except SupportError as error:
        return _enrollment_refused(error)
    options, challenge = ceremonies.registration_options(console.config, person)
    ceremony = console.store.put_ceremony(
        "enroll",
        session_hash=session_of(request).session_hash,
        challenge=ceremonies.challenge_text(challenge),
        bound_to=claims.jti,
        now=now_utc(),
    )
    words = console.words(request)
    return _answer(words(Text.TOUCH_TO_ENROLL), ok=True, ceremony=ceremony, options=options)


@csrf_protected
async def enroll_finish_endpoint(request: Request) -> Response:
    console = console_of(request)
    body = await _body(request)
    now = now_utc()
    try:
        claims = _enrollment(console, request, body)
    except SupportError as error:
        return _enrollment_refused(error)
    ceremony = console.store.take_ceremony(
        body.get("ceremony"), kind="enroll", session_hash=session_of(request).session_hash, now=now
    )
    if ceremony is None or ceremony.bound_to != claims.jti:
        return _answer(console.words(request)(Text.CEREMONY_GONE), status_code=400)
    try:
        passkey = verify_passkey_enrollment(
            body.get("credential") or {},
            challenge=ceremonies.challenge_bytes(ceremony.challenge),
            rp_id=console.config.rp_id,
            origin=console.config.origin,
            now=now,
        )
        if not console.store.use_enrollment(claims.jti, claims.sub, now=now):
            return _answer(LINK_USED, status_code=400)
        publish_passkey(console.directory.location, claims.sub, passkey)
    except SupportError as error:
        words = console.words(request)
        return _answer(words(Text.NOT_ENROLLED, reason=error.message), status_code=400, code=error.code)
    words = console.words(request)
    return _answer(words(Text.ENROLLED, subject=claims.sub), ok=True, redirect="/signin")


@csrf_protected
async def signin_options_endpoint(request: Request) -> Response:
    console = console_of(request)
    options, challenge = ceremonies.signin_options(console.config)
    ceremony = console.store.put_ceremony(
        "signin",
        session_hash=session_of(request).session_hash,
        challenge=ceremonies.challenge_text(challenge),
        bound_to="",
        now=now_utc(),
    )
    words = console.words(request)
    return _answer(words(Text.TOUCH_TO_SIGN_IN), ok=True, ceremony=ceremony, options=options)


@csrf_protected
async def signin_finish_endpoint(request: Request) -> Response:
    console = console_of(request)
    words = console.words(request)
    body = await _body(request)
    now = now_utc()
    old = session_of(request)
    ceremony = console.store.take_ceremony(body.get("ceremony"), kind="signin", session_hash=old.session_hash, now=now)
    if ceremony is None:
        return _answer(words(Text.CEREMONY_GONE), status_code=400)
    try:
        person = ceremonies.signed_in_reviewer(
            console.config,
            console.directory.current(),
            body.get("credential"),
            challenge=ceremonies.challenge_bytes(ceremony.challenge),
        )
    except SupportError as error:
        return _answer(error.message, status_code=403, code=error.code)
    console.store.end_session(old.session_hash)
    fresh = console.store.create_session(person.subject, now=now)
    request.state.session_replaced = True
    response = _answer(words(Text.SIGNED_IN, name=person.display_name), ok=True, redirect="/")
    set_session_cookie(response, console.config, fresh.session_id)
    return response


def _review_words(console: Console, request: Request, body: dict[str, Any]) -> Words:
    """The reviewer's choice, else the language the case page was shown in (console.js sends it)."""
    shown = body.get("language")
    return console.words(request, case_language=parse_language(shown if isinstance(shown, str) else None))


@csrf_protected
async def review_options_endpoint(request: Request) -> Response:
    console = console_of(request)
    body = await _body(request)
    words = _review_words(console, request, body)
    person = console.reviewer(request)
    if person is None:
        return _answer(words(Text.SIGNED_OUT), status_code=401)
    try:
        decision = Decision(str(body.get("decision")))
    except ValueError:
        return _answer(words(Text.CHOOSE_DECISION), status_code=400)
    case_id = request.path_params["case_id"]
    try:
        view = await console.cases.open(case_id).read(person.identity(), start_hint=console.config.start_hint)
    except AuthorizationError:
        return _answer(words(Text.NO_SUCH_CASE), status_code=404)
    except SupportError as error:
        return _answer(words(Text.SERVICE_UNAVAILABLE), status_code=503, code=error.code)
    if view.digest is None or view.status is not CaseStatus.WAITING_APPROVAL:
        return _answer(words(Text.NOT_WAITING), status_code=409, code=ReviewRefusal.CASE_NOT_WAITING_FOR_REVIEW.value)
    if person.subject in (
        view.approved_by if view.action is not None else view.effect.approved_by if view.effect else []
    ):
        code = ReviewRefusal.REVIEWER_ALREADY_APPROVED.value
        return _answer(words(Text.YOU_APPROVED_WAITING), status_code=409, code=code)
    if not person.passkeys:
        return _answer(words(Text.NO_PASSKEY), status_code=403)
    now = now_utc()
    statement = ceremonies.review_statement(
        case_id=view.case_id, digest=view.digest, decision=decision, reviewer=person.subject, now=now
    )
    options = ceremonies.review_options(console.config, person, statement)
    ceremony = console.store.put_ceremony(
        "review",
        session_hash=session_of(request).session_hash,
        challenge=options["challenge"],
        bound_to=view.case_id,
        payload=statement.model_dump_json(),
        now=now,
    )
    touch = words(Text.TOUCH_TO_APPROVE if decision is Decision.APPROVE else Text.TOUCH_TO_REJECT)
    return _answer(touch, ok=True, ceremony=ceremony, options=options)


@csrf_protected
async def review_finish_endpoint(request: Request) -> Response:
    console = console_of(request)
    body = await _body(request)
    words = _review_words(console, request, body)
    person = console.reviewer(request)
    if person is None:
        return _answer(words(Text.SIGNED_OUT), status_code=401)
    ceremony = console.store.take_ceremony(
        body.get("ceremony"), kind="review", session_hash=session_of(request).session_hash, now=now_utc()
    )
    case_id = request.path_params["case_id"]
    if ceremony is None or ceremony.bound_to != case_id.removeprefix("case-"):
        return _answer(words(Text.CEREMONY_GONE), status_code=400)
    try:
        statement = ReviewStatement.model_validate_json(ceremony.payload)
    except ValidationError:
        return _answer(words(Text.CEREMONY_GONE), status_code=400)
    if statement.reviewer != person.subject:
        return _answer(words(Text.CEREMONY_GONE), status_code=400)
    credential = body.get("credential")
    try:
        approval = passkey_approval_from_browser(statement, credential if isinstance(credential, dict) else {})
        token = encode_passkey_approval(approval)
        outcome = await console.cases.open(statement.case_id).review(SignedReview(approval_token=token))
    except AuthorizationError as error:
        code = error.refusal if isinstance(error, ReviewRefused) else None
        sentence = words.refusal(code, reviewer=person.subject) if code else error.message
        return _answer(words(Text.REFUSED, sentence=sentence.rstrip(".")), status_code=403, code=code or error.code)
    except SupportError as error:
        return _answer(error.message, status_code=409, code=error.code)
    if outcome.awaits_another_reviewer:
        return _answer(words(Text.YOU_APPROVED_WAITING), ok=True, waiting=True)
    approved = statement.decision == Decision.APPROVE
    accepted = Text.ACCEPTED_APPROVE if approved else Text.ACCEPTED_REJECT
    with contextlib.suppress(SupportError):  # an action's approval is worded as one; the refund's is the default
        after = await console.cases.open(statement.case_id).read(
            person.identity(), start_hint=console.config.start_hint
        )
        if after.action is not None:
            accepted = Text.ACCEPTED_ACTION_APPROVE if approved else Text.ACCEPTED_ACTION_REJECT
    return _answer(words(accepted), ok=True)

"""The demo sign-in (``--demo-sign-in`` only): a customer of the demo directory signs in by name and
gets built-in applicant tokens, signed here with the state dir's issuer key as ``starter.py`` signs
them (:class:`keystore.signers.KeyFileSigner`). It stands in for a merchant's login service on a
developer's machine: whoever reaches it can act as any customer of the directory, so it is never on
unless asked for, and its routes answer 404 otherwise. It never logs a token.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from case_client import case_id_for
from contracts.action_credentials import CONFIRMATION_TTL
from contracts.credentials import APPLICANT_TOKEN_TTL
from contracts.errors import SupportError
from contracts.identity import Identity, Role
from contracts.knowledge import Language
from customer_channel.bodies import (
    DemoConfirmationRequest,
    DemoCustomer,
    DemoCustomers,
    DemoSignIn,
    DemoToken,
    DemoTokenRequest,
)
from customer_channel.channel import Channel, answering, channel_of, channel_refusal, language_of, unavailable
from customer_channel.words import ChannelRefusal


def _demo_channel(request: Request, language: Language) -> Channel:
    channel = channel_of(request)
    if not channel.config.demo_sign_in or channel.signer is None:
        raise channel_refusal(ChannelRefusal.NO_SUCH_PAGE, language, 404)
    return channel


def _customer(channel: Channel, subject: str, language: Language) -> Identity:
    try:
        person = channel.directory.current().person(subject)
    except SupportError as error:
        raise unavailable(language, error) from None
    if person is None or person.role is not Role.CUSTOMER:
        raise channel_refusal(ChannelRefusal.UNKNOWN_DEMO_CUSTOMER, language, 404)
    return person.identity()


@answering
async def demo_customers(request: Request) -> Response:
    """``GET /demo/customers``: the directory's customers, for the chat page's select."""
    language = language_of(request)
    channel = _demo_channel(request, language)
    try:
        people = channel.directory.current().people
    except SupportError as error:
        raise unavailable(language, error) from None
    listed = [
        DemoCustomer(subject=person.subject, display_name=person.display_name, tenant=person.tenant)
        for person in people
        if person.role is Role.CUSTOMER
    ]
    return JSONResponse(DemoCustomers(customers=listed).model_dump())


@answering
async def demo_sign_in(request: Request) -> Response:
    """``POST /demo/sign-in {subject}``: the customer as the directory lists them."""
    language = language_of(request)
    channel = _demo_channel(request, language)
    body = await channel.body(request, DemoSignIn, language)
    identity = _customer(channel, body.subject, language)
    shown = DemoCustomer(subject=identity.subject, display_name=identity.display_name, tenant=identity.tenant)
    return JSONResponse(shown.model_dump())


@answering
async def demo_token(request: Request) -> Response:
    """``POST /demo/token {subject, case_id?}``: a built-in applicant token for that customer and case
    (a fresh case id when none is given)."""
    language = language_of(request)
    channel = _demo_channel(request, language)
    body = await channel.body(request, DemoTokenRequest, language)
    identity = _customer(channel, body.subject, language)
    case_id = body.case_id or case_id_for(None, identity)
    assert channel.signer is not None  # _demo_channel checked it
    try:
        token = channel.signer.applicant_token(identity, case_id)
    except SupportError as error:
        raise unavailable(language, error) from None
    issued = DemoToken(token=token, case_id=case_id, expires_in=int(APPLICANT_TOKEN_TTL.total_seconds()))
    return JSONResponse(issued.model_dump(), headers={"Cache-Control": "no-store"})


@answering
async def demo_confirmation(request: Request) -> Response:
    """``POST /demo/confirmation {subject, case_id, digest}``: that customer's signed "yes" to the action
    proposal ``digest`` of ``case_id``, as their sign-in would sign it once they said yes on its page."""
    language = language_of(request)
    channel = _demo_channel(request, language)
    body = await channel.body(request, DemoConfirmationRequest, language)
    identity = _customer(channel, body.subject, language)
    assert channel.signer is not None  # _demo_channel checked it
    try:
        token = channel.signer.confirmation_token(identity, case_id=body.case_id, digest=body.digest)
    except SupportError as error:
        raise unavailable(language, error) from None
    issued = DemoToken(token=token, case_id=body.case_id, expires_in=int(CONFIRMATION_TTL.total_seconds()))
    return JSONResponse(issued.model_dump(), headers={"Cache-Control": "no-store"})

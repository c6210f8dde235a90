"""Applicant tokens from an outside, OIDC-style identity provider: its own JSON Web Key Set (fetched
from ``SUPPORT_APPLICANT_JWKS_URL`` with PyJWT's ``PyJWKClient``) and algorithms (RS256, ES256, EdDSA),
checked against the support directory exactly like the built-in issuer's tokens.

What a verified outside token proves: the provider named ``issuer``, with a key its key set publishes
now, vouched for this ``sub`` of this tenant (and, where the token states one, this role), for this
audience, within the token's lifetime; and the directory lists that subject as a customer of that
tenant. The directory, not the token, decides who the applicant is (name, tenant, role).

What it does not prove: which case it is for. An outside token carries no case id; the case binding is
the workflow id, which the ``verify_applicant`` activity checks. Like any bearer ID token, one token can
start more than one case during its lifetime, and whoever holds a copy can use it until it expires: the
provider's token lifetime is the window. Nor does it prove anything once the provider drops the key:
a key removed from the key set stops verifying within ``jwks_cache_seconds`` (no per-key cache that
outlives the key set is kept).

The key set is fetched with one deadline for the whole request (:data:`JWKS_DEADLINE_SECONDS`, 10 s)
and read to at most :data:`MAX_JWKS_BYTES` (1 MiB), streamed, whatever ``Content-Length`` says
(:mod:`keystore.bounded_fetch`): a provider that trickles its key set, or sends a huge one, cannot hold
a verification or the process's memory.

Nothing here raises anything but :class:`~contracts.credentials.CredentialRefused` (a token that does not
prove what it claims, however it was crafted), :class:`~contracts.errors.TransientError`
(``applicant_jwks_unavailable``: the key set could not be fetched or read; ``applicant_jwks_too_slow``:
it did not arrive within the deadline; ``applicant_jwks_too_large``: it is over the byte cap; each
retryable) and :class:`~contracts.errors.ConfigurationError` (``applicant_issuer_invalid``: a bad setting).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePublicKey
from cryptography.hazmat.primitives.asymmetric.ed448 import Ed448PublicKey
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from jwt.exceptions import (
    DecodeError,
    InvalidAudienceError,
    InvalidIssuerError,
    InvalidJTIError,
    InvalidSignatureError,
    InvalidSubjectError,
    InvalidTokenError,
    MissingRequiredClaimError,
    PyJWKClientConnectionError,
    PyJWKClientError,
    PyJWKSetError,
)

from contracts.approval_claims import CredentialCode
from contracts.credentials import APPLICANT_AUDIENCE, CLOCK_SKEW, CredentialRefused, directory_customer
from contracts.directory import Directory
from contracts.errors import ConfigurationError
from contracts.identity import Identity
from keystore.bounded_fetch import FetchTooLarge, FetchTooSlow
from keystore.codes import KeystoreErrorCode
from keystore.outside_jwks import BoundedJWKClient, keys_refused, keys_unavailable

__all__ = [
    "ALGORITHMS_ENV",
    "APPLICANT_ISSUER_ENV_NAMES",
    "AUDIENCE_ENV",
    "ISSUER_ENV",
    "JWKS_CACHE_SECONDS_ENV",
    "JWKS_DEADLINE_SECONDS",
    "JWKS_URL_ENV",
    "MAX_JWKS_BYTES",
    "ROLE_CLAIM_ENV",
    "SUPPORTED_ALGORITHMS",
    "TENANT_CLAIM_ENV",
    "OutsideIssuer",
]

ISSUER_ENV = "SUPPORT_APPLICANT_ISSUER"
JWKS_URL_ENV = "SUPPORT_APPLICANT_JWKS_URL"
AUDIENCE_ENV = "SUPPORT_APPLICANT_AUDIENCE"
ALGORITHMS_ENV = "SUPPORT_APPLICANT_ALGORITHMS"
TENANT_CLAIM_ENV = "SUPPORT_APPLICANT_TENANT_CLAIM"
ROLE_CLAIM_ENV = "SUPPORT_APPLICANT_ROLE_CLAIM"
JWKS_CACHE_SECONDS_ENV = "SUPPORT_APPLICANT_JWKS_CACHE_SECONDS"
APPLICANT_ISSUER_ENV_NAMES = (
    ISSUER_ENV,
    JWKS_URL_ENV,
    AUDIENCE_ENV,
    ALGORITHMS_ENV,
    TENANT_CLAIM_ENV,
    ROLE_CLAIM_ENV,
    JWKS_CACHE_SECONDS_ENV,
)
"""Every setting of the outside issuer: the worker passes these on to the commerce server it launches."""

SUPPORTED_ALGORITHMS = ("RS256", "ES256", "EdDSA")
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})
"""The only hosts a plain-http key set URL may name (tests, a local identity provider)."""
MAX_ISSUER_CHARS = 200
"""What :class:`~contracts.credentials.VerifiedApplicant` records of the issuer."""
MAX_CLAIM_NAME_CHARS = 100
MAX_CACHE_SECONDS = 86_400
MAX_OUTSIDE_TOKEN_CHARS = 16_000
"""Provider ID tokens carry more claims than the built-in issuer's, but are still a few kilobytes."""
JWKS_DEADLINE_SECONDS = 10.0
"""The whole key set request (connect, TLS, headers, body), not each read: past it, ``applicant_jwks_too_slow``."""
MAX_JWKS_DEADLINE_SECONDS = 120.0
MAX_JWKS_BYTES = 1024 * 1024
"""A key set of a few keys is a few kilobytes; one over 1 MiB is ``applicant_jwks_too_large``, never read whole."""
MAX_JWKS_BYTES_LIMIT = 16 * 1024 * 1024
PUBLIC_KEY_TYPES = (RSAPublicKey, EllipticCurvePublicKey, Ed25519PublicKey, Ed448PublicKey)
_ENV_FOR_FIELD = {
    "issuer": ISSUER_ENV,
    "jwks_url": JWKS_URL_ENV,
    "audience": AUDIENCE_ENV,
    "algorithms": ALGORITHMS_ENV,
    "tenant_claim": TENANT_CLAIM_ENV,
    "role_claim": ROLE_CLAIM_ENV,
    "jwks_cache_seconds": JWKS_CACHE_SECONDS_ENV,
}


def _invalid(name: str, problem: str) -> ConfigurationError:
    return ConfigurationError(KeystoreErrorCode.APPLICANT_ISSUER_INVALID, f"{name}: {problem}")


def _refuse(code: CredentialCode, message: str) -> CredentialRefused:
    return CredentialRefused(code, message)


@dataclass(frozen=True)
class OutsideIssuer:
    """An outside identity provider whose applicant tokens the service accepts (see the module docs)."""

    issuer: str
    jwks_url: str
    audience: str = APPLICANT_AUDIENCE
    algorithms: tuple[str, ...] = ("RS256",)
    tenant_claim: str = "tenant"
    role_claim: str = "role"
    """The claim that states the applicant's role; empty: the token states none (the directory's role
    must still be customer)."""
    jwks_cache_seconds: int = 300
    jwks_deadline_seconds: float = JWKS_DEADLINE_SECONDS
    """The whole key set request, connect to last byte (tests shorten it; not an environment setting)."""
    jwks_max_bytes: int = MAX_JWKS_BYTES
    """The most of the key set that is read."""

    def __post_init__(self) -> None:
        problem = _first_problem(self.__dict__)
        if problem is not None:
            raise _invalid(*problem)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> OutsideIssuer | None:
        """The outside issuer the environment configures, or None when ``SUPPORT_APPLICANT_JWKS_URL`` is
        unset or empty (the built-in issuer stays the default). A bad setting, or another
        ``SUPPORT_APPLICANT_*`` setting without the URL, is ``applicant_issuer_invalid`` naming it."""
        url = environ.get(JWKS_URL_ENV, "").strip()
        if not url:
            stray = next((name for name in APPLICANT_ISSUER_ENV_NAMES if environ.get(name, "").strip()), None)
            if stray is not None:
                raise _invalid(stray, f"is set but {JWKS_URL_ENV} is not; set both or neither")
            return None
        fields: dict[str, Any] = {"issuer": environ.get(ISSUER_ENV, "").strip(), "jwks_url": url}
        if AUDIENCE_ENV in environ:
            fields["audience"] = environ[AUDIENCE_ENV].strip()
        if ALGORITHMS_ENV in environ:
            names = [name.strip() for name in environ[ALGORITHMS_ENV].split(",") if name.strip()]
            fields["algorithms"] = tuple(dict.fromkeys(names))
        if TENANT_CLAIM_ENV in environ:
            fields["tenant_claim"] = environ[TENANT_CLAIM_ENV].strip()
        if ROLE_CLAIM_ENV in environ:
            fields["role_claim"] = environ[ROLE_CLAIM_ENV].strip()
        if JWKS_CACHE_SECONDS_ENV in environ:
            text = environ[JWKS_CACHE_SECONDS_ENV].strip()
            if not text.isascii() or not text.isdigit():
                raise _invalid(JWKS_CACHE_SECONDS_ENV, f"must be a whole number of seconds, not {text[:20]!r}")
            fields["jwks_cache_seconds"] = int(text)
        problem = _first_problem(fields)
        if problem is not None:
            field, message = problem
            raise _invalid(_ENV_FOR_FIELD[field], message)
        return cls(**fields)

    @cached_property
    def _client(self) -> jwt.PyJWKClient:
        """One key set client per issuer, so the key set is fetched once per cache lifetime. No per-kid
        cache (``cache_keys``): PyJWT's never expires, and a key the provider withdrew must stop working."""
        return BoundedJWKClient(
            self.jwks_url,
            deadline_seconds=self.jwks_deadline_seconds,
            max_bytes=self.jwks_max_bytes,
            lifespan=self.jwks_cache_seconds,
        )

    def verify(self, token: str, directory: Directory, *, now: datetime, check_time: bool = True) -> Identity:
        """The customer this provider's token proves, as the directory lists them. With ``check_time``
        False only the signature and the claims are checked, not the lifetime (the commerce server
        re-checks at pay time a token that was valid when the case started). Blocking: it may fetch
        the key set over the network."""
        if not isinstance(token, str) or not token or len(token) > MAX_OUTSIDE_TOKEN_CHARS:
            raise _refuse(CredentialCode.MALFORMED_TOKEN, "The credential is missing or not a token.")
        try:
            header = jwt.get_unverified_header(token)
        except Exception:  # anything a sender can put in a header: refused, never raised
            raise _refuse(CredentialCode.MALFORMED_TOKEN, "The credential is not a signed token.") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            raise _refuse(CredentialCode.WRONG_ALGORITHM, f"Only {', '.join(self.algorithms)} signatures are accepted.")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise _refuse(CredentialCode.UNKNOWN_SIGNER, "The token names no key of the identity provider.")
        claims = self._decode(token, self._public_key(kid, algorithm), algorithm)
        if check_time:
            _check_time(claims, now)
        subject, tenant = claims["sub"], claims.get(self.tenant_claim)
        if not isinstance(subject, str) or not subject or not isinstance(tenant, str):
            raise _refuse(CredentialCode.MALFORMED_CLAIMS, "The applicant token lacks its subject or tenant.")
        role = claims.get(self.role_claim) if self.role_claim else None
        if role is not None and not isinstance(role, str):
            raise _refuse(CredentialCode.MALFORMED_CLAIMS, "The applicant token's role is not a name.")
        return directory_customer(directory, subject, tenant=tenant, role=role)

    def _public_key(self, kid: str, algorithm: str) -> Any:
        """The provider's public key ``kid``, for ``algorithm`` only."""
        try:
            self._client.get_signing_keys()  # the cached key set, fetched when missing or stale
        except (FetchTooSlow, FetchTooLarge) as refused:
            raise keys_refused(refused) from None
        except PyJWKClientConnectionError as error:
            raise keys_unavailable(str(error)[:200]) from None
        except Exception as error:  # a key set that is no JSON object, holds no usable key, ...
            raise keys_unavailable(f"{type(error).__name__}: {str(error)[:160]}") from None
        try:
            jwk = self._client.get_signing_key(kid)  # refreshes once for a new kid, after a cooldown
        except (FetchTooSlow, FetchTooLarge) as refused:
            raise keys_refused(refused) from None
        except PyJWKClientConnectionError as error:
            raise keys_unavailable(str(error)[:200]) from None
        except (PyJWKClientError, PyJWKSetError):
            raise _refuse(
                CredentialCode.UNKNOWN_SIGNER, f"The identity provider publishes no key {kid[:60]!r}."
            ) from None
        except Exception as error:
            raise keys_unavailable(f"{type(error).__name__}: {str(error)[:160]}") from None
        if jwk.algorithm_name != algorithm:
            raise _refuse(
                CredentialCode.WRONG_ALGORITHM, f"Key {kid[:60]!r} is for {jwk.algorithm_name}, not {algorithm}."
            )
        if not isinstance(jwk.key, PUBLIC_KEY_TYPES):
            raise _refuse(
                CredentialCode.PRIVATE_KEY_IN_KEY_SET, "The identity provider's key set holds a private key; refused."
            )
        return jwk.key

    def _decode(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer,
                options={
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "require": ["iss", "aud", "sub", "iat", "exp"],
                },
            )
        except InvalidSignatureError:
            raise _refuse(
                CredentialCode.BAD_SIGNATURE, "The token does not verify with the identity provider's key."
            ) from None
        except InvalidIssuerError:
            raise _refuse(CredentialCode.WRONG_ISSUER, "The token was issued by another identity provider.") from None
        except InvalidAudienceError:
            raise _refuse(CredentialCode.WRONG_AUDIENCE, "The token was issued for another audience.") from None
        except (MissingRequiredClaimError, InvalidSubjectError, InvalidJTIError, DecodeError):
            raise _refuse(CredentialCode.MALFORMED_CLAIMS, "The applicant token lacks a required claim.") from None
        except InvalidTokenError as error:
            raise _refuse(CredentialCode.BAD_SIGNATURE, f"The token does not verify: {type(error).__name__}.") from None
        except Exception as error:  # a crafted token must be refused, not crash the caller
            raise _refuse(
                CredentialCode.MALFORMED_TOKEN, f"The token cannot be checked: {type(error).__name__}."
            ) from None
        return claims


def _check_time(claims: Mapping[str, Any], now: datetime) -> None:
    """``iat`` (and ``nbf``, when present) not after ``now``, and ``exp`` not before it, each with
    :data:`~contracts.credentials.CLOCK_SKEW` of leeway for the provider's clock."""
    skew = CLOCK_SKEW.total_seconds()
    current = now.timestamp()
    issued, expires, not_before = claims["iat"], claims["exp"], claims.get("nbf", claims["iat"])
    if not all(_is_time(value) for value in (issued, expires, not_before)):
        raise _refuse(CredentialCode.MALFORMED_CLAIMS, "The applicant token's times are not numbers.")
    if issued > current + skew or not_before > current + skew:
        raise _refuse(CredentialCode.ISSUED_IN_FUTURE, "The token is dated in the future.")
    if current >= expires + skew:
        raise _refuse(CredentialCode.TOKEN_EXPIRED, "The token has expired.")


def _is_time(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _first_problem(fields: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first setting among ``fields`` that is invalid, as (field, problem); None when all are fine."""
    issuer = fields.get("issuer", "x")
    if not isinstance(issuer, str) or not issuer or len(issuer) > MAX_ISSUER_CHARS:
        return "issuer", f"the issuer is required, at most {MAX_ISSUER_CHARS} characters"
    url = fields.get("jwks_url", "https://x")
    url_problem = _url_problem(url) if isinstance(url, str) else "must be a URL"
    if url_problem is not None:
        return "jwks_url", url_problem
    audience = fields.get("audience", APPLICANT_AUDIENCE)
    if not isinstance(audience, str) or not audience:
        return "audience", "the audience must not be empty"
    algorithms = fields.get("algorithms", ("RS256",))
    unknown = [name for name in algorithms if name not in SUPPORTED_ALGORITHMS] if isinstance(algorithms, tuple) else []
    if not isinstance(algorithms, tuple) or not algorithms or unknown:
        shown = f" ({', '.join(map(str, unknown))[:60]} is not)" if unknown else ""
        return "algorithms", f"must be a comma list of {', '.join(SUPPORTED_ALGORITHMS)}{shown}"
    for name, may_be_empty in (("tenant_claim", False), ("role_claim", True)):
        claim = fields.get(name, "x")
        if not isinstance(claim, str) or len(claim) > MAX_CLAIM_NAME_CHARS or (not claim and not may_be_empty):
            return name, f"must be a claim name of at most {MAX_CLAIM_NAME_CHARS} characters"
        if any(character.isspace() for character in claim):
            return name, "a claim name has no spaces"
    seconds = fields.get("jwks_cache_seconds", 300)
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_CACHE_SECONDS:
        return "jwks_cache_seconds", f"must be between 1 and {MAX_CACHE_SECONDS} seconds"
    deadline = fields.get("jwks_deadline_seconds", JWKS_DEADLINE_SECONDS)
    if (
        isinstance(deadline, bool)
        or not isinstance(deadline, int | float)
        or not math.isfinite(deadline)
        or not 0 < deadline <= MAX_JWKS_DEADLINE_SECONDS
    ):
        return "jwks_deadline_seconds", f"must be more than 0 and at most {MAX_JWKS_DEADLINE_SECONDS:g} seconds"
    cap = fields.get("jwks_max_bytes", MAX_JWKS_BYTES)
    if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_JWKS_BYTES_LIMIT:
        return "jwks_max_bytes", f"must be between 1 and {MAX_JWKS_BYTES_LIMIT} bytes"
    return None


def _url_problem(url: str) -> str | None:
    """Why ``url`` may not name the key set: https only, plain http only to this machine."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port
    except ValueError:
        return f"{url[:80]!r} is not a URL"
    if not host:
        return f"{url[:80]!r} names no host"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and host in LOCAL_HOSTS:
        return None
    return f"{url[:80]!r} must be https:// (plain http only for 127.0.0.1 or localhost)"

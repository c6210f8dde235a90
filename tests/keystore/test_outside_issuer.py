"""Applicant tokens of an outside identity provider: a real key set served over local HTTP, tokens
minted here with RSA, P-256 and Ed25519 keys, checked against a directory built here."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from contracts.credentials import CredentialRefused
from contracts.directory import Directory, Person, Tenant
from contracts.errors import ConfigurationError, TransientError
from contracts.identity import Role
from keystore.outside_issuer import (
    ALGORITHMS_ENV,
    AUDIENCE_ENV,
    ISSUER_ENV,
    JWKS_CACHE_SECONDS_ENV,
    JWKS_URL_ENV,
    ROLE_CLAIM_ENV,
    TENANT_CLAIM_ENV,
    OutsideIssuer,
)
from tests.jwks_support import JwksServer, serve_jwks

ISSUER = "https://idp.example.test/"
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALL_ALGORITHMS = ("RS256", "ES256", "EdDSA")
KIDS = {"RS256": "idp-1", "ES256": "idp-ec", "EdDSA": "idp-ed"}

# tests/layers.py puts a test in make test's full layer by fixture, marker or name, and names no local
# HTTP server: the tests that fetch the key set from one carry `slow` (make check's guard refuses
# their connections to 127.0.0.1). The others never open a socket and stay in make check.
fetches_key_set = pytest.mark.slow


@dataclass
class Keys:
    private: dict[str, Any]
    jwks: dict[str, Any]


@pytest.fixture(scope="module")
def keys() -> Keys:
    private: dict[str, Any] = {
        "RS256": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "ES256": ec.generate_private_key(ec.SECP256R1()),
        "EdDSA": Ed25519PrivateKey.generate(),
    }
    public = [
        RSAAlgorithm.to_jwk(private["RS256"].public_key(), as_dict=True),
        ECAlgorithm.to_jwk(private["ES256"].public_key(), as_dict=True),
        OKPAlgorithm.to_jwk(private["EdDSA"].public_key(), as_dict=True),
    ]
    listed = zip(public, ALL_ALGORITHMS, strict=True)
    jwks = {"keys": [{**jwk, "kid": KIDS[alg], "alg": alg, "use": "sig"} for jwk, alg in listed]}
    return Keys(private=private, jwks=jwks)


@pytest.fixture
def jwks_server(keys: Keys) -> Iterator[JwksServer]:
    with serve_jwks(keys.jwks) as running:
        yield running


@pytest.fixture(scope="module")
def directory() -> Directory:
    return Directory(
        tenants=[Tenant(tenant="qinghe", display_name="Qinghe"), Tenant(tenant="south", display_name="South")],
        people=[
            Person(subject="alice", tenant="qinghe", role=Role.CUSTOMER, display_name="Alice"),
            Person(subject="lin", tenant="south", role=Role.CUSTOMER, display_name="Lin"),
            Person(subject="chen", tenant="qinghe", role=Role.REVIEWER, display_name="Chen"),
        ],
    )


def claims(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": "support-case",
        "sub": "alice",
        "tenant": "qinghe",
        "role": "customer",
        "iat": int(NOW.timestamp()),
        "exp": int((NOW + timedelta(minutes=5)).timestamp()),
    }
    base.update(overrides)
    return {name: value for name, value in base.items() if value is not None}


def unsigned_token() -> str:
    """A token with ``alg: none`` and no signature, as an attacker would send it."""
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "kid": "idp-1"}).encode()).rstrip(b"=")
    payload = base64.urlsafe_b64encode(json.dumps(claims()).encode()).rstrip(b"=")
    return f"{header.decode()}.{payload.decode()}."


def mint(keys: Keys, algorithm: str = "RS256", *, kid: str | None = None, key: Any = None, **overrides: Any) -> str:
    signing_key = key if key is not None else keys.private[algorithm]
    return jwt.encode(claims(**overrides), signing_key, algorithm=algorithm, headers={"kid": kid or KIDS[algorithm]})


def issuer_for(url: str, **settings: Any) -> OutsideIssuer:
    return OutsideIssuer(issuer=ISSUER, jwks_url=url, **settings)


def refusal(issuer: OutsideIssuer, token: str, directory: Directory, **kwargs: Any) -> str:
    with pytest.raises(CredentialRefused) as caught:
        issuer.verify(token, directory, now=kwargs.pop("now", NOW), **kwargs)
    return caught.value.code


# --- verification against the served key set --------------------------------------------------------


@fetches_key_set
def test_an_rs256_token_proves_the_customer_the_directory_lists(
    keys: Keys, jwks_server: JwksServer, directory: Directory
) -> None:
    identity = issuer_for(jwks_server.url).verify(mint(keys), directory, now=NOW)
    alice = directory.person("alice")
    assert alice is not None and identity == alice.identity()


@fetches_key_set
@pytest.mark.parametrize("algorithm", ["ES256", "EdDSA"])
def test_es256_and_eddsa_tokens_verify_when_allowed(
    keys: Keys, jwks_server: JwksServer, directory: Directory, algorithm: str
) -> None:
    issuer = issuer_for(jwks_server.url, algorithms=ALL_ALGORITHMS)
    assert issuer.verify(mint(keys, algorithm), directory, now=NOW).subject == "alice"
    assert refusal(issuer_for(jwks_server.url), mint(keys, algorithm), directory) == "wrong_algorithm"


@fetches_key_set
def test_the_key_set_is_fetched_once_per_cache_lifetime(
    keys: Keys, jwks_server: JwksServer, directory: Directory
) -> None:
    issuer = issuer_for(jwks_server.url, algorithms=ALL_ALGORITHMS)
    for algorithm in ALL_ALGORITHMS:
        assert issuer.verify(mint(keys, algorithm), directory, now=NOW).subject == "alice"
    assert jwks_server.requests == ["/jwks"]


@fetches_key_set
@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"iss": "https://other-idp.example.test/"}, "wrong_issuer"),
        ({"aud": "someone-else"}, "wrong_audience"),
        ({"tenant": "south"}, "unknown_applicant"),
        ({"sub": "nobody"}, "unknown_applicant"),
        ({"sub": "chen"}, "unknown_applicant"),
        ({"role": "reviewer"}, "unknown_applicant"),
        ({"tenant": None}, "malformed_claims"),
        ({"tenant": ["qinghe"]}, "malformed_claims"),
        ({"sub": None}, "malformed_claims"),
        ({"iss": None}, "malformed_claims"),
        ({"exp": "later"}, "malformed_claims"),
        ({"exp": float("nan")}, "malformed_claims"),
    ],
)
def test_a_token_whose_claims_disagree_is_refused(
    keys: Keys, jwks_server: JwksServer, directory: Directory, overrides: dict[str, Any], code: str
) -> None:
    assert refusal(issuer_for(jwks_server.url), mint(keys, **overrides), directory) == code


@fetches_key_set
def test_lifetime_is_checked_with_clock_skew(keys: Keys, jwks_server: JwksServer, directory: Directory) -> None:
    issuer = issuer_for(jwks_server.url)
    token = mint(keys)
    assert issuer.verify(token, directory, now=NOW + timedelta(minutes=5, seconds=30)).subject == "alice"
    assert refusal(issuer, token, directory, now=NOW + timedelta(minutes=6, seconds=1)) == "token_expired"
    assert refusal(issuer, token, directory, now=NOW - timedelta(minutes=2)) == "issued_in_future"


@fetches_key_set
def test_without_the_time_check_an_expired_but_valid_token_still_verifies(
    keys: Keys, jwks_server: JwksServer, directory: Directory
) -> None:
    issuer = issuer_for(jwks_server.url)
    later = NOW + timedelta(days=3)
    assert issuer.verify(mint(keys), directory, now=later, check_time=False).subject == "alice"
    assert refusal(issuer, mint(keys, sub="lin"), directory, now=later, check_time=False) == "unknown_applicant"


@fetches_key_set
def test_an_unknown_kid_is_an_unknown_signer(keys: Keys, jwks_server: JwksServer, directory: Directory) -> None:
    assert refusal(issuer_for(jwks_server.url), mint(keys, kid="idp-9"), directory) == "unknown_signer"


@fetches_key_set
def test_a_key_outside_the_key_set_using_a_listed_kid_is_a_bad_signature(
    keys: Keys, jwks_server: JwksServer, directory: Directory
) -> None:
    impostor = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = mint(keys, kid="idp-1", key=impostor)
    assert refusal(issuer_for(jwks_server.url), token, directory) == "bad_signature"


@fetches_key_set
def test_a_listed_key_of_another_algorithm_is_refused(
    keys: Keys, jwks_server: JwksServer, directory: Directory
) -> None:
    token = mint(keys, "ES256", kid="idp-1")
    assert refusal(issuer_for(jwks_server.url, algorithms=ALL_ALGORITHMS), token, directory) == "wrong_algorithm"


@fetches_key_set
def test_the_role_claim_can_be_switched_off(keys: Keys, jwks_server: JwksServer, directory: Directory) -> None:
    token = mint(keys, role="reviewer")
    assert issuer_for(jwks_server.url, role_claim="").verify(token, directory, now=NOW).subject == "alice"
    assert refusal(issuer_for(jwks_server.url, role_claim=""), mint(keys, sub="chen"), directory) == "unknown_applicant"


@fetches_key_set
def test_a_key_set_that_cannot_be_fetched_is_a_transient_error(
    keys: Keys, jwks_server: JwksServer, directory: Directory
) -> None:
    jwks_server.stop()
    with pytest.raises(TransientError) as caught:
        issuer_for(jwks_server.url).verify(mint(keys), directory, now=NOW)
    assert caught.value.code == "applicant_jwks_unavailable"
    assert caught.value.retryable


# --- refused before any key is fetched (no socket) -------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("", "malformed_token"),
        ("not-a-token", "malformed_token"),
        ("a.b.c", "malformed_token"),
        ("x" * 20_000, "malformed_token"),
        (unsigned_token(), "wrong_algorithm"),
    ],
)
def test_a_token_that_cannot_be_read_is_refused(directory: Directory, token: str, code: str) -> None:
    assert refusal(issuer_for("http://127.0.0.1:9/jwks"), token, directory) == code


def test_an_algorithm_not_allowed_is_refused_before_fetching(keys: Keys, directory: Directory) -> None:
    issuer = issuer_for("http://127.0.0.1:9/jwks")
    assert refusal(issuer, mint(keys, "ES256"), directory) == "wrong_algorithm"
    hs256 = jwt.encode(claims(), "a-shared-secret-of-at-least-32-bytes!", algorithm="HS256", headers={"kid": "idp-1"})
    assert refusal(issuer, hs256, directory) == "wrong_algorithm"


def test_a_token_without_a_kid_names_no_signer(keys: Keys, directory: Directory) -> None:
    token = jwt.encode(claims(), keys.private["RS256"], algorithm="RS256")
    assert refusal(issuer_for("http://127.0.0.1:9/jwks"), token, directory) == "unknown_signer"


# --- settings from the environment ---------------------------------------------------------------------


def test_without_a_key_set_url_the_built_in_issuer_stays() -> None:
    assert OutsideIssuer.from_environment({}) is None
    assert OutsideIssuer.from_environment({JWKS_URL_ENV: ""}) is None


def test_every_setting_is_read_from_the_environment() -> None:
    issuer = OutsideIssuer.from_environment(
        {
            ISSUER_ENV: ISSUER,
            JWKS_URL_ENV: "https://idp.example.test/.well-known/jwks.json",
            AUDIENCE_ENV: "cases",
            ALGORITHMS_ENV: "ES256, EdDSA,ES256",
            TENANT_CLAIM_ENV: "org",
            ROLE_CLAIM_ENV: "",
            JWKS_CACHE_SECONDS_ENV: "60",
        }
    )
    assert issuer == OutsideIssuer(
        issuer=ISSUER,
        jwks_url="https://idp.example.test/.well-known/jwks.json",
        audience="cases",
        algorithms=("ES256", "EdDSA"),
        tenant_claim="org",
        role_claim="",
        jwks_cache_seconds=60,
    )
    defaults = OutsideIssuer.from_environment({ISSUER_ENV: ISSUER, JWKS_URL_ENV: "http://localhost:8080/jwks"})
    assert defaults is not None
    assert (defaults.audience, defaults.algorithms, defaults.tenant_claim, defaults.role_claim) == (
        "support-case",
        ("RS256",),
        "tenant",
        "role",
    )


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({ALGORITHMS_ENV: "RS256,HS256"}, ALGORITHMS_ENV),
        ({ALGORITHMS_ENV: " , "}, ALGORITHMS_ENV),
        ({JWKS_URL_ENV: "http://idp.example.test/jwks"}, JWKS_URL_ENV),
        ({JWKS_URL_ENV: "http://localhost.example.test/jwks"}, JWKS_URL_ENV),
        ({JWKS_URL_ENV: "http://127.0.0.1@idp.example.test/jwks"}, JWKS_URL_ENV),
        ({JWKS_URL_ENV: "file:///etc/jwks.json"}, JWKS_URL_ENV),
        ({JWKS_URL_ENV: "https://idp.example.test:99999/jwks"}, JWKS_URL_ENV),
        ({ISSUER_ENV: ""}, ISSUER_ENV),
        ({AUDIENCE_ENV: ""}, AUDIENCE_ENV),
        ({TENANT_CLAIM_ENV: ""}, TENANT_CLAIM_ENV),
        ({ROLE_CLAIM_ENV: "my role"}, ROLE_CLAIM_ENV),
        ({JWKS_CACHE_SECONDS_ENV: "0"}, JWKS_CACHE_SECONDS_ENV),
        ({JWKS_CACHE_SECONDS_ENV: "5m"}, JWKS_CACHE_SECONDS_ENV),
    ],
)
def test_a_bad_setting_is_one_configuration_error_naming_it(environ: dict[str, str], named: str) -> None:
    settings = {ISSUER_ENV: ISSUER, JWKS_URL_ENV: "https://idp.example.test/jwks", **environ}
    with pytest.raises(ConfigurationError) as caught:
        OutsideIssuer.from_environment(settings)
    assert caught.value.code == "applicant_issuer_invalid"
    assert caught.value.message.startswith(f"{named}:")
    assert "\n" not in caught.value.message


def test_a_setting_without_the_key_set_url_is_refused() -> None:
    with pytest.raises(ConfigurationError) as caught:
        OutsideIssuer.from_environment({ISSUER_ENV: ISSUER})
    assert caught.value.message.startswith(f"{ISSUER_ENV}:")


def test_an_issuer_built_in_code_is_checked_too() -> None:
    with pytest.raises(ConfigurationError) as caught:
        OutsideIssuer(issuer=ISSUER, jwks_url="https://idp.example.test/jwks", algorithms=("PS256",))
    assert caught.value.message.startswith("algorithms:")

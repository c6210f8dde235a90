"""Applicant tokens of an outside identity provider: a real key set served over local HTTP, tokens
minted here with RSA, P-256 and Ed25519 keys, checked against a directory built here."""

from __future__ import annotations

import base64
import json
import time
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
    JWKS_DEADLINE_SECONDS,
    JWKS_URL_ENV,
    MAX_JWKS_BYTES,
    ROLE_CLAIM_ENV,
    TENANT_CLAIM_ENV,
    OutsideIssuer,
)
from tests.jwks_support import JwksServer, http_head, serve_jwks, serve_raw

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


# --- a key set that trickles or floods (issue 44) -----------------------------------------------------------

TRICKLE_PAUSE = 0.05
"""Seconds between the trickled bytes: the whole answer takes several seconds, the deadline 0.5 s."""
SHORT_DEADLINE = 0.5
FLOOD_BYTES = 64 * 1024 * 1024
FLOOD_CHUNK = 64 * 1024


def eddsa_jwks_body(keys: Keys, padding: int = 0) -> bytes:
    """The EdDSA key alone (a short body), with ``padding`` spaces before its closing brace (still JSON)."""
    listed = [jwk for jwk in keys.jwks["keys"] if jwk["alg"] == "EdDSA"]
    return json.dumps({"keys": listed}).encode()[:-1] + b" " * padding + b"}"


def transient_code(issuer: OutsideIssuer, token: str, directory: Directory) -> str:
    with pytest.raises(TransientError) as caught:
        issuer.verify(token, directory, now=NOW)
    assert caught.value.retryable
    assert "\n" not in caught.value.message
    return caught.value.code


@fetches_key_set
@pytest.mark.parametrize("trickled", ["headers", "body"])
def test_a_trickled_key_set_is_refused_at_the_deadline(keys: Keys, directory: Directory, trickled: str) -> None:
    """A byte every 50 ms never trips a per-read timeout; the whole request's deadline stops it, in the
    headers as in the body, long before the provider would have finished (issue 44: a byte every 1.5 s
    held verification for over 90 s)."""
    body = eddsa_jwks_body(keys)
    answer = http_head(content_length=len(body)) + body
    head = b"" if trickled == "headers" else http_head(content_length=len(body))
    chunks = ([head] if head else []) + [answer[index : index + 1] for index in range(len(head), len(answer))]
    with serve_raw(chunks, pause=TRICKLE_PAUSE) as server:
        issuer = issuer_for(server.url, algorithms=ALL_ALGORITHMS, jwks_deadline_seconds=SHORT_DEADLINE)
        started = time.monotonic()
        code = transient_code(issuer, mint(keys, "EdDSA"), directory)
        waited = time.monotonic() - started
        assert code == "applicant_jwks_too_slow"
        assert server.finished.wait(10), "the refused fetch still holds the connection"
        assert server.sent[0] < server.total, "the provider got to send its whole answer"
    assert waited < (len(answer) - len(head)) * TRICKLE_PAUSE / 2


@fetches_key_set
@pytest.mark.parametrize("framing", ["no length", "chunked", "honest length", "length 1 byte under the cap"])
def test_a_key_set_over_the_cap_is_refused_without_reading_it_all(
    keys: Keys, directory: Directory, framing: str
) -> None:
    """64 MiB of key set (valid JSON: the key, then spaces) against the 1 MiB cap, whatever the length
    header says: the fetch stops at the cap and hangs up, so most of it is never even sent. A length
    that lies low is believed: only that much is read, and the cut-off JSON is unreadable."""
    body = eddsa_jwks_body(keys, padding=FLOOD_BYTES)
    pieces = [body[start : start + FLOOD_CHUNK] for start in range(0, len(body), FLOOD_CHUNK)]
    if framing == "chunked":
        head = http_head(chunked=True)
        pieces = [b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces] + [b"0\r\n\r\n"]
    elif framing == "honest length":
        head = http_head(content_length=len(body))
    elif framing == "no length":
        head = http_head()
    else:
        head = http_head(content_length=MAX_JWKS_BYTES - 1)
    with serve_raw([head, *pieces]) as server:
        code = transient_code(issuer_for(server.url, algorithms=ALL_ALGORITHMS), mint(keys, "EdDSA"), directory)
        assert server.finished.wait(30), "the refused fetch still holds the connection"
        assert server.sent[0] < server.total // 2
    assert code == ("applicant_jwks_unavailable" if framing.startswith("length") else "applicant_jwks_too_large")


@fetches_key_set
def test_a_key_set_at_the_cap_is_read(keys: Keys, directory: Directory) -> None:
    body = eddsa_jwks_body(keys)
    body = body[:-1] + b" " * (MAX_JWKS_BYTES - len(body)) + b"}"
    assert len(body) == MAX_JWKS_BYTES
    with serve_raw([http_head(), body]) as server:
        issuer = issuer_for(server.url, algorithms=ALL_ALGORITHMS)
        assert issuer.verify(mint(keys, "EdDSA"), directory, now=NOW).subject == "alice"


def test_the_key_set_fetch_has_a_deadline_and_a_cap_by_default() -> None:
    issuer = issuer_for("https://idp.example.test/jwks")
    assert (issuer.jwks_deadline_seconds, issuer.jwks_max_bytes) == (JWKS_DEADLINE_SECONDS, MAX_JWKS_BYTES)
    assert (JWKS_DEADLINE_SECONDS, MAX_JWKS_BYTES) == (10.0, 1024 * 1024)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("jwks_deadline_seconds", 0),
        ("jwks_deadline_seconds", float("inf")),
        ("jwks_deadline_seconds", 1000),
        ("jwks_max_bytes", 0),
        ("jwks_max_bytes", 1 << 30),
    ],
)
def test_a_bad_deadline_or_cap_is_a_configuration_error(setting: str, value: float) -> None:
    with pytest.raises(ConfigurationError) as caught:
        issuer_for("https://idp.example.test/jwks", **{setting: value})
    assert caught.value.message.startswith(f"{setting}:")


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

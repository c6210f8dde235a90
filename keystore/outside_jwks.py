"""The outside identity provider's key set, fetched with a deadline and a byte cap, and the transient
errors of a key set that cannot be had (:mod:`keystore.outside_issuer` verifies tokens with it)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
from typing import Any

import jwt
from jwt.exceptions import PyJWKClientConnectionError

from contracts.errors import TransientError
from keystore.bounded_fetch import FetchTooLarge, FetchTooSlow, fetch_bounded
from keystore.codes import KeystoreErrorCode


def keys_unavailable(detail: str) -> TransientError:
    return TransientError(
        KeystoreErrorCode.APPLICANT_JWKS_UNAVAILABLE, f"The identity provider's key set is unavailable: {detail}"
    )


def keys_refused(refused: FetchTooSlow | FetchTooLarge) -> TransientError:
    """The key set fetch that was stopped at its deadline or its byte cap, as one line with its own code."""
    if isinstance(refused, FetchTooSlow):
        return TransientError(
            KeystoreErrorCode.APPLICANT_JWKS_TOO_SLOW, f"The identity provider's key set is too slow: {refused}."
        )
    return TransientError(
        KeystoreErrorCode.APPLICANT_JWKS_TOO_LARGE, f"The identity provider's key set is too large: {refused}."
    )


class BoundedJWKClient(jwt.PyJWKClient):
    """PyJWT's key set client, fetching with a total deadline and a byte cap (:func:`fetch_bounded`)
    instead of ``urlopen`` with a per-read timeout and an unbounded ``json.load``. Everything else (the
    key set cache, the refresh cooldown, the key lookup) is PyJWT's."""

    def __init__(self, uri: str, *, deadline_seconds: float, max_bytes: int, lifespan: float) -> None:
        super().__init__(uri, cache_keys=False, lifespan=lifespan, timeout=deadline_seconds)
        self._deadline_seconds = deadline_seconds
        self._max_bytes = max_bytes

    def fetch_data(self) -> Any:
        try:
            body = fetch_bounded(
                self.uri,
                deadline_seconds=self._deadline_seconds,
                max_bytes=self._max_bytes,
                headers=self.headers,
                follow_redirects=False,
            )
        except (urllib.error.URLError, TimeoutError, http.client.HTTPException) as error:
            if isinstance(error, urllib.error.HTTPError):
                error.close()
            raise PyJWKClientConnectionError(f'Fail to fetch data from the url, err: "{error}"') from error
        jwk_set = self._as_jwk_set_payload(json.loads(body))
        if self.jwk_set_cache is not None:
            self.jwk_set_cache.put(jwk_set)
        self._last_successful_fetch = time.monotonic()
        return jwk_set

"""The codes of the key store's failures: the directory file, the signing keys, the applicant issuer."""

from __future__ import annotations

from enum import StrEnum


class KeystoreErrorCode(StrEnum):
    # the directory file
    DIRECTORY_MISSING = "directory_missing"
    DIRECTORY_NOT_A_FILE = "directory_not_a_file"
    DIRECTORY_INSECURE = "directory_insecure"
    DIRECTORY_UNREADABLE = "directory_unreadable"
    DIRECTORY_INVALID = "directory_invalid"
    DIRECTORY_TOO_LARGE = "directory_too_large"
    DIRECTORY_TOO_SLOW = "directory_too_slow"
    # the signing keys
    SIGNING_KEY_MISSING = "signing_key_missing"
    SIGNING_KEY_EXPOSED = "signing_key_exposed"
    SIGNING_KEY_INVALID = "signing_key_invalid"
    REVIEWER_KEY_MISSING = "reviewer_key_missing"
    # the applicant issuer's key set
    APPLICANT_ISSUER_INVALID = "applicant_issuer_invalid"
    APPLICANT_JWKS_UNAVAILABLE = "applicant_jwks_unavailable"
    APPLICANT_JWKS_TOO_SLOW = "applicant_jwks_too_slow"
    APPLICANT_JWKS_TOO_LARGE = "applicant_jwks_too_large"

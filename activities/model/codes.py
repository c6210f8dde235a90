"""The stable codes of the model room's failures: a provider's refusal, a reply that breaks its
contract, a draft the code checks refuse, a model setting that cannot work.

The values cross into Temporal in the activity's failure and are recorded in case histories and
handoff reasons (``draft_refused:<code>``), so a value never changes; a new failure gets a new member.
"""

from __future__ import annotations

from enum import StrEnum


class ModelErrorCode(StrEnum):
    """Why a model request, its reply or a model setting was refused."""

    # the provider's answer to the request (provider_profiles.map_provider_error)
    PROVIDER_TIMEOUT = "provider_timeout"
    PROVIDER_UNREACHABLE = "provider_unreachable"
    PROVIDER_RATE_LIMITED = "provider_rate_limited"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    PROVIDER_REJECTED_REQUEST = "provider_rejected_request"
    PROVIDER_AUTH_FAILED = "provider_auth_failed"
    PROVIDER_BILLING = "provider_billing"
    MODEL_NOT_FOUND = "model_not_found"
    # the reply against its contract (model_gateway, model_validation)
    TRUNCATED_OR_MALFORMED = "truncated_or_malformed"
    CONTRACT_VIOLATION = "contract_violation"
    UNKNOWN_TOOL_OFFERED = "unknown_tool_offered"
    ORDER_ID_NOT_IN_QUESTION = "order_id_not_in_question"
    DUPLICATE_CITATIONS = "duplicate_citations"
    CITATION_NOT_IN_CONTEXT = "citation_not_in_context"
    # a composed draft against the code checks (draft_checks)
    DRAFT_NAMES_OTHER_ORDER = "draft_names_other_order"
    DRAFT_CONTRADICTS_QUOTE = "draft_contradicts_quote"
    DRAFT_AMOUNT_NOT_IN_RECORDS = "draft_amount_not_in_records"
    DRAFT_LANGUAGE_MISMATCH = "draft_language_mismatch"
    # the worker's model settings (model_settings, model_sampling, model_prices)
    MODEL_NOT_CONFIGURED = "model_not_configured"
    API_KEY_MISSING = "api_key_missing"
    INVALID_BASE_URL = "invalid_base_url"
    INVALID_MAX_TOKENS = "invalid_max_tokens"
    INVALID_MODEL_PROFILE = "invalid_model_profile"
    INVALID_MODEL_TIMEOUT = "invalid_model_timeout"
    INVALID_MODEL_SEED = "invalid_model_seed"
    INVALID_MODEL_TEMPERATURE = "invalid_model_temperature"
    INVALID_MODEL_PRICES = "invalid_model_prices"
    REVIEWER_WITHOUT_PROVIDER = "reviewer_without_provider"

"""A failing provider through the real workflow: retried only when it can help, always bounded, counted.

Every request the worker sends reaches the scripted provider over real HTTP; the provider records it
(with its arrival time on the provider's monotonic clock). The case's ``budgets.model_requests`` must
equal what the provider really received, retries included.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.case import CaseStatus
from tests.adversarial.adversary import ScriptedWorld, scripted_world
from tests.adversarial.provider import Reply, ScriptedProvider, http_error, slow

pytestmark = pytest.mark.slow

REFUND = "Please refund QH-1001 and explain the amount and the policy"
HONEST_REQUESTS = {"plan": 1, "investigate": 3, "compose": 1, "review": 1}
"""What the refund case costs when the provider answers every request the first time."""


def _with_plan(extra: int) -> dict[str, int]:
    return HONEST_REQUESTS | {"plan": 1 + extra}


async def test_two_503s_then_success_are_retried_and_counted(adversary: ScriptedWorld) -> None:
    adversary.provider.script("plan", http_error(503), http_error(503))

    handle, view = await adversary.run(REFUND)

    assert view.status is CaseStatus.WAITING_APPROVAL
    assert view.proposal is not None and view.proposal.amount_cents == 12900
    assert adversary.provider.statuses("plan") == [503, 503, 200]
    assert adversary.provider.counts() == _with_plan(2)
    assert view.budgets.model_requests == adversary.provider.count() == 8
    assert await adversary.event_details(handle, "model_failed") == []
    adversary.assert_no_commerce_writes()


async def test_a_provider_that_always_fails_ends_the_case_after_a_bounded_number_of_requests(
    adversary: ScriptedWorld,
) -> None:
    adversary.provider.default_all(http_error(503))

    handle, view = await adversary.run(REFUND)

    assert view.status is CaseStatus.NEEDS_HUMAN and view.reason == "model_unavailable:provider_unavailable"
    assert await adversary.event_details(handle, "model_failed") == ["plan_case: transient: provider_unavailable"]
    assert adversary.provider.statuses() == [503, 503, 503]
    assert view.budgets.model_requests == adversary.provider.count() == 3 <= view.budgets.max_model_requests
    adversary.assert_no_commerce_writes()


async def test_a_provider_that_fails_mid_case_is_bounded_too(adversary: ScriptedWorld) -> None:
    """Plan and investigation succeed; every draft request fails: still bounded, still counted."""
    adversary.provider.default("compose", http_error(502))

    handle, view = await adversary.run(REFUND)

    assert view.status is CaseStatus.NEEDS_HUMAN and view.reason == "model_unavailable:provider_unavailable"
    assert adversary.provider.counts() == HONEST_REQUESTS | {"compose": 3, "review": 0}
    assert adversary.provider.statuses("compose") == [502, 502, 502]
    assert view.budgets.model_requests == adversary.provider.count() == 7
    assert await adversary.event_details(handle, "model_failed") == ["compose_answer: transient: provider_unavailable"]
    assert view.proposal is None
    adversary.assert_no_commerce_writes()


async def test_a_401_is_not_retried_and_fails_the_case_with_one_configuration_message(
    adversary: ScriptedWorld,
) -> None:
    adversary.provider.default_all(http_error(401, message="Incorrect API key provided"))

    handle, view = await adversary.run(REFUND)

    assert adversary.provider.statuses() == [401]
    assert view.status is CaseStatus.FAILED
    assert view.reason == (
        "model_configuration:provider_auth_failed: The openai-compatible endpoint rejected the API key "
        "(HTTP 401); check OPENAI_API_KEY."
    )
    assert await adversary.event_details(handle, "model_failed") == ["plan_case: configuration: provider_auth_failed"]
    assert view.budgets.model_requests == 1
    assert adversary.provider.api_key not in view.model_dump_json()
    adversary.assert_no_commerce_writes()


async def test_a_429_retry_after_is_honoured(adversary: ScriptedWorld) -> None:
    adversary.provider.script("plan", http_error(429, retry_after="3"))

    handle, view = await adversary.run(REFUND)

    first, second = [r for r in adversary.provider.requests if r.kind == "plan"]
    assert (first.status, second.status) == (429, 200)
    # measured on the provider's clock: the retry came no sooner than Retry-After said
    # (without the header, Temporal's first backoff would have retried after 1 s)
    assert second.at - first.at >= 3.0
    assert view.status is CaseStatus.WAITING_APPROVAL
    assert view.budgets.model_requests == adversary.provider.count() == 7
    assert await adversary.event_details(handle, "model_failed") == []
    adversary.assert_no_commerce_writes()


async def test_a_cut_off_response_body_is_a_contract_error_and_not_retried(adversary: ScriptedWorld) -> None:
    cut = '{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assi'
    adversary.provider.script("plan", Reply(raw_body=cut))

    handle, view = await adversary.run(REFUND)

    assert view.status is CaseStatus.NEEDS_HUMAN and view.reason == "model_contract:truncated_or_malformed"
    assert adversary.provider.count() == view.budgets.model_requests == 1
    assert await adversary.event_details(handle, "model_failed") == ["plan_case: contract: truncated_or_malformed"]
    adversary.assert_no_commerce_writes()


async def test_a_provider_slower_than_the_timeout_is_retried_then_given_up(
    temporal_client: Client, tmp_path: Path, provider: ScriptedProvider
) -> None:
    """The adapter's timeout is a model setting (40 s by default); here 1 s, so the test stays fast."""
    provider.default("plan", slow(3.0))
    async with scripted_world(temporal_client, tmp_path / "state", provider, timeout_seconds=1.0) as adversary:
        assert adversary.settings.timeout_seconds == 1.0
        handle, view = await adversary.run(REFUND)

        assert view.status is CaseStatus.NEEDS_HUMAN and view.reason == "model_unavailable:provider_timeout"
        assert provider.count() == view.budgets.model_requests == 3
        assert await adversary.event_details(handle, "model_failed") == ["plan_case: transient: provider_timeout"]
        adversary.assert_no_commerce_writes()


async def test_one_slow_answer_is_retried_and_the_case_goes_on(
    temporal_client: Client, tmp_path: Path, provider: ScriptedProvider
) -> None:
    provider.script("plan", slow(3.0))
    async with scripted_world(temporal_client, tmp_path / "state", provider, timeout_seconds=1.0) as adversary:
        handle, view = await adversary.run(REFUND)

        assert view.status is CaseStatus.WAITING_APPROVAL
        assert view.proposal is not None and view.proposal.amount_cents == 12900
        assert provider.counts() == _with_plan(1)
        assert view.budgets.model_requests == provider.count() == 7
        assert await adversary.event_details(handle, "model_failed") == []

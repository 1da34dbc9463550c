"""Fault injection: chosen endpoints answer 429 or 5xx, added latency, dropped webhooks."""

import pytest
import requests
from django.core.exceptions import ValidationError

from partner.core.errors import ApplicationError
from partner.sandbox.faults import fault_set, faults_clear
from partner.sandbox.models import FaultRule, WebhookDelivery
from partner.sandbox.webhooks import webhook_deliveries_wait
from tests.helpers.sandbox import host_transaction


def test_next_n_calls_of_one_endpoint_fail(api, sandbox):
    fault_set(endpoint="products", status=503, count=2)
    url = api.url("/partner/v2/products")
    answers = [api.get(url, timeout=10) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [503, 503, 200]
    assert answers[0].json()["error"] == "unavailable"
    assert answers[0].headers["Retry-After"] == "1"
    # Other endpoints are untouched.
    assert api.get(api.url("/partner/v2/transactions"), timeout=10).status_code == 200


def test_rate_limited_with_retry_after(api, sandbox):
    fault_set(endpoint="transaction", status=429, count=1, retry_after=3)
    transaction_id = host_transaction(sandbox)
    first = api.get(api.url(f"/partner/v2/transactions/{transaction_id}"), timeout=10)
    assert first.status_code == 429
    assert first.headers["Retry-After"] == "3"
    assert first.json()["error"] == "rate_limited"
    assert api.get(api.url(f"/partner/v2/transactions/{transaction_id}"), timeout=10).status_code == 200


def test_rate_zero_and_one(api, sandbox):
    fault_set(endpoint="products", status=500, rate=0.0)
    assert all(api.get(api.url("/partner/v2/products"), timeout=10).status_code == 200 for _ in range(5))
    faults_clear()
    fault_set(endpoint="*", status=502, rate=1.0)
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 502
    assert requests.post(sandbox.token_url, data={}, timeout=10).status_code == 502
    faults_clear()
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 200


def test_a_response_patch_fault_changes_nothing(api, sandbox):
    transaction_id = host_transaction(sandbox)
    fault_set(endpoint="response", status=500, count=1)
    url = api.url(f"/partner/v2/transactions/{transaction_id}/response")
    assert api.patch(url, json={"status": "completed"}, timeout=10).status_code == 500
    assert api.get(api.url(f"/partner/v2/transactions/{transaction_id}"), timeout=10).json()["status"] == "created"


def test_latency_alone_still_answers(api, sandbox):
    rule = fault_set(endpoint="products", latency=0.05, count=1)
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 200
    rule.refresh_from_db()
    assert rule.remaining == 0


def test_dropped_webhooks(sandbox):
    fault_set(endpoint="webhook", drop_webhooks=True, count=1)
    host_transaction(sandbox)
    host_transaction(sandbox, loan=1)
    assert webhook_deliveries_wait(10)
    assert len(sandbox.receiver.calls) == 1
    assert sorted(WebhookDelivery.objects.values_list("status", flat=True)) == ["delivered", "dropped"]


def test_faults_from_settings(api, sandbox, settings):
    settings.SANDBOX_FAULTS = [{"endpoint": "products", "status": 503}]
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 503
    assert api.get(api.url("/partner/v2/transactions"), timeout=10).status_code == 200
    settings.SANDBOX_FAULTS = []
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 200


def test_rule_saved_like_the_admin_form_takes_effect_at_once(api, sandbox):
    FaultRule.objects.create(endpoint="products", status=504, remaining=1)
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 504
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 200


def test_bad_fault_settings_are_refused(sandbox):
    for kwargs in [
        {"endpoint": "nowhere", "status": 503},
        {"endpoint": "products", "status": 404},
        {"endpoint": "products", "rate": 2.0},
        {"endpoint": "products", "drop_webhooks": True},
    ]:
        with pytest.raises(ApplicationError):
            fault_set(**kwargs)
    with pytest.raises(ValidationError):
        FaultRule(endpoint="products", status=302).full_clean()

"""An outage of ours makes an order wait, never fails it: only the service's or the lender's answer may.

The order runs as its task runs it (`runs.order_run`, its counted retries passed on as Celery
would), against the fake of the service. The cache (Redis) goes away right after the upload,
before the PATCH, where the client reads its bearer token from it: the fault that failed orders
for good ("Gave up after retries: ConnectionError: Error 111 connecting to ..."). It stays away
for more runs than the retry budget allows, then comes back; the order is delivered, never
failed, the lender told nothing, and no run counted. A bug, meanwhile, still gives up.
"""

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache

from partner.fulfillment.models import Delivery, DeliveryKind, FailureCode, Order, OrderStatus
from partner.fulfillment.runs import order_run
from partner.platform import client
from tests.helpers.orders import LOAN_RIGHT, automated_order
from tests.helpers.ports import free_port

pytestmark = pytest.mark.django_db

TXN = "txn-outage-1"
LOAN = LOAN_RIGHT


@pytest.fixture
def order(fake_platform):
    return automated_order(fake_platform, TXN, loan=LOAN)


@pytest.fixture
def cache_outage(settings, fake_platform, monkeypatch):
    """The cache away from the first upload on (a Redis nobody listens on), until `end()`: the
    fake's PATCH first reads the bearer token from the cache, as the service's client does."""
    here = settings.CACHES
    backend = "django.core.cache.backends.redis.RedisCache"
    away = {"default": {"BACKEND": backend, "LOCATION": f"redis://127.0.0.1:{free_port()}/0"}}
    upload, patch = fake_platform.upload_resource, fake_platform.patch_response

    def upload_then_cache_away(slot, data):
        upload(slot, data)
        settings.CACHES = away

    def patch_after_token_read(transaction_id, payload):
        cache.get("svc:token")  # the service's client reads its bearer token first (partner.platform.tokens)
        return patch(transaction_id, payload)

    monkeypatch.setattr(client, "upload_resource", upload_then_cache_away)
    monkeypatch.setattr(client, "patch_response", patch_after_token_read)

    class Outage:
        @staticmethod
        def end():
            settings.CACHES = here

    return Outage


def runs_until_done(order_id: int, *, on_retry, limit: int = 20):
    """Run the order as its task would until a run asks for no retry; `on_retry(n, outcome)` after
    each run that does. The counted retries, as Celery's request would carry them."""
    retries = 0
    for n in range(limit):
        outcome = order_run(order_id=order_id, retries=retries)
        if outcome.retry is None:
            return retries
        retries += outcome.retry.counted
        on_retry(n, outcome)
    raise AssertionError(f"still retrying after {limit} runs")


def test_the_cache_away_between_upload_and_patch_makes_the_order_wait_not_fail(fake_platform, order, cache_outage):
    away_for = django_settings.CELERY_TASK_MAX_RETRIES + 3  # more runs than the budget allows
    seen = []

    def on_retry(n, outcome):
        now = Order.objects.get(pk=order.pk)
        seen.append((now.status, now.last_error, outcome.retry.counted))
        if n + 1 == away_for:
            cache_outage.end()

    counted = runs_until_done(order.pk, on_retry=on_retry)

    assert len(seen) == away_for and counted == 0
    assert {(status, counted) for status, _, counted in seen} == {(OrderStatus.IN_PROGRESS, False)}
    assert all(
        error.startswith("Waiting for the cache (ours) to come back: ConnectionError: Error 111 connecting to")
        for _, error, _ in seen
    ), seen[0]
    done = Order.objects.get(pk=order.pk)
    assert (done.status, done.failure_code, done.failure_reason) == (OrderStatus.RESPONSE_DELIVERED, "", "")
    assert not Delivery.objects.filter(order=done, kind=DeliveryKind.FAILURE_NOTICE).exists()
    assert fake_platform.names().count("upload_resource") == 1  # what was sent stays sent
    [(_, payload)] = fake_platform.called("patch_response")  # one PATCH, once the cache was back
    assert payload.get("partnerStatus") != "failed"


def test_a_bug_still_gives_the_order_up(fake_platform, order):
    fake_platform.fail("patch_response", KeyError("partnerStatus"))

    outcome = order_run(order_id=order.pk)

    assert outcome.retry is None
    failed = Order.objects.get(pk=order.pk)
    assert (failed.status, failed.failure_code) == (OrderStatus.FAILED, FailureCode.RETRIES_EXHAUSTED)
    assert failed.failure_reason == "Gave up after retries: KeyError: 'partnerStatus'"

"""The sender is fenced: a worker that lost the order's lease while a call hung sends nothing more.

Measured once with two worker hosts: one cut off from the network during an upload came back after
its lease had run out and the other host had completed the order, finished its upload and sent a
second PATCH. Here the same happens in one process: the upload "hangs" while the lease runs out and
another worker runs the order; then the first worker's call returns.
"""

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from partner.core.leases import Lease
from partner.fulfillment.models import DeliveryState, Order, OrderStatus
from partner.fulfillment.runs import order_run
from partner.platform import client
from tests.helpers.orders import automated_order

pytestmark = pytest.mark.django_db

TXN = "txn-fenced-1"
LOAN = {
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "state": "CA", "postalCode": "94105"}
}


@pytest.fixture
def order(fake_platform):
    return automated_order(fake_platform, TXN, loan=LOAN)


def test_a_worker_whose_lease_ran_out_during_an_upload_sends_no_patch(fake_platform, order, monkeypatch):
    upload = fake_platform.upload_resource
    other = {}

    def upload_that_hangs_once(slot, handle):
        answer = upload(slot, handle)
        if "cut_off" not in other:
            other["cut_off"] = True
            # Cut off mid-upload past the end of the lease: another worker takes the order and runs it.
            Order.objects.filter(pk=order.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
            other["outcome"] = order_run(order_id=order.pk)
            assert fake_platform.names()[-1] == "patch_response"  # the other worker delivered
        return answer

    monkeypatch.setattr(client, "upload_resource", upload_that_hangs_once)

    outcome = order_run(order_id=order.pk)  # the first worker's call returns now

    assert outcome.retry is None and other["outcome"].sent == 1
    assert len(fake_platform.called("patch_response")) == 1  # the other worker's only
    done = Order.objects.get(pk=order.pk)
    assert done.status == OrderStatus.RESPONSE_DELIVERED and done.claimed_until is None
    [result] = done.deliveries.all()
    assert (result.state, result.sequence, result.attempts) == (DeliveryState.SENT, 1, 1)


def test_a_worker_whose_lease_renewal_failed_stops_before_its_patch(fake_platform, order, monkeypatch, settings):
    """The database away from the worker's renewal while an upload runs: the lease cannot be proved
    any more, so the worker stops at its next call instead of sending it."""
    settings.LEASE_SECONDS = 0.3  # renewed every 0.1 s
    uploading, renewal_failed = threading.Event(), threading.Event()
    renew = Lease.renew

    def renew_failing_in_the_renewal_thread(lease, **updates):
        if threading.current_thread().name == "lease-renewal":
            if not uploading.is_set():
                # Renewed, until the upload runs (this test's rows are in its own transaction, out of
                # the thread's sight): a renewal failing earlier, on a slow machine, would stop the
                # worker at another call than the one this test is about.
                return True
            lease.lost = True  # as `Lease.renew` leaves it when its UPDATE raises
            renewal_failed.set()
            raise OperationalError("the database is away")
        return renew(lease, **updates)

    monkeypatch.setattr(Lease, "renew", renew_failing_in_the_renewal_thread)
    upload = fake_platform.upload_resource

    def upload_during_the_failure(slot, handle):
        uploading.set()
        assert renewal_failed.wait(timeout=10), "the renewal never ran"
        return upload(slot, handle)

    monkeypatch.setattr(client, "upload_resource", upload_during_the_failure)

    outcome = order_run(order_id=order.pk)

    assert outcome.retry is None
    assert fake_platform.names() == ["get_transaction", "request_upload_slots", "upload_resource"]  # no PATCH
    stopped = Order.objects.get(pk=order.pk)
    assert stopped.status == OrderStatus.IN_PROGRESS  # left for the hand-back once its lease runs out
    assert stopped.deliveries.get().state == DeliveryState.PENDING


def test_a_worker_paused_past_its_lease_after_its_fence_sends_no_patch(fake_platform, order, monkeypatch, settings):
    """SIGSTOP between the fence in the database and the PATCH: the whole process stops, its renewals
    too, for longer than the lease; when it resumes, another worker may hold the order. The PATCH is
    stopped on the worker's own clock before its first byte leaves (`Lease.held`)."""
    import time

    from partner.core import outbound
    from partner.core.checkpoints import checkpoint_install, checkpoint_remove
    from tests.helpers.servers import FakeServer, Reply

    settings.LEASE_SECONDS = 0.6
    paused = threading.Event()
    renew = Lease.renew

    def renew_unless_paused(lease, **updates):
        if threading.current_thread().name == "lease-renewal":
            # Stopped with its process once paused. Before, it cannot see this test's rows (they are in
            # the test's transaction): its renewal would find none and mark the lease lost, and the
            # worker would stop at its first fence, the prepare's, on a machine slow enough.
            return True
        return renew(lease, **updates)

    def pause():
        paused.set()
        time.sleep(settings.LEASE_SECONDS)

    platform = FakeServer()  # the service's PATCH, over real HTTP through the outbound module
    platform.route("PATCH", f"/transactions/{TXN}/response", Reply(200, {}))

    def patch_over_http(transaction_id, payload):
        with outbound.one_off() as session:
            url = f"{platform.url}/transactions/{transaction_id}/response"
            outbound.exchange("PATCH", url, channel="service", session=session, timeout=(1, 1), json=payload)
        return {}

    monkeypatch.setattr(Lease, "renew", renew_unless_paused)
    monkeypatch.setattr(client, "patch_response", patch_over_http)
    checkpoint_install("sender.fenced", pause)
    try:
        outcome = order_run(order_id=order.pk)
    finally:
        checkpoint_remove("sender.fenced")
        platform.close()

    assert outcome.sent == 0 and platform.seen == []  # nothing left the worker after its pause
    assert Order.objects.get(pk=order.pk).deliveries.get().state == DeliveryState.PENDING


def test_a_worker_whose_lease_ran_out_during_the_work_stores_nothing_and_fails_nothing(
    fake_platform, order, monkeypatch
):
    """The fulfiller's work outlasts the lease (a worker cut off, a slow report): another worker
    takes the order and prepares it, and its PATCH meets a 503 (the result waits to be sent again).
    The first one's store is fenced by the lease: it stores nothing and leaves the order alone.
    Seen in a 2,000-order fault schedule before the fence: the late worker's documents met the
    other's (a duplicate position) and its run failed the order with `retries_exhausted`."""
    from partner.fulfillment.automated.fulfillers.address_verification import AddressVerificationFulfiller
    from partner.platform.errors import ServiceUnavailableError

    fulfill, other = AddressVerificationFulfiller.fulfill, {}

    def fulfill_past_the_lease(self, **kwargs):
        work = fulfill(self, **kwargs)
        if "took_over" not in other:
            other["took_over"] = True
            Order.objects.filter(pk=order.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
            fake_platform.fail("patch_response", ServiceUnavailableError("service unavailable", status=503))
            other["outcome"] = order_run(order_id=order.pk)
        return work

    monkeypatch.setattr(AddressVerificationFulfiller, "fulfill", fulfill_past_the_lease)

    outcome = order_run(order_id=order.pk)  # the first worker's work returns now

    assert other["outcome"].retry is not None  # the other worker's result waits for its next run
    assert outcome.retry is None and outcome.sent == 0
    waiting = Order.objects.get(pk=order.pk)
    assert waiting.status == OrderStatus.IN_PROGRESS and waiting.failure_code == ""
    [result] = waiting.deliveries.all()
    assert result.state == DeliveryState.PENDING
    assert waiting.attachments.count() == result.attachments.count() >= 1  # stored once, by the other

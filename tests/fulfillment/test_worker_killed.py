"""A worker killed (SIGKILL) mid-fulfillment: after a restart the order completes, nothing twice.

Two drills, run on every broker `make test` finds (Redis, RabbitMQ, the local default):

Killed during a slow upload (the sandbox's latency fault holds the PUT): the outcome of the upload
is unknown, so the order is delivered with a fresh slot and one PATCH. The dead worker's lease runs
out (LEASE_SECONDS, 15 s) and the new worker's housekeeping loop hands the order back at once;
nothing waits for the broker's redelivery (Redis's comes after its visibility timeout, an hour), so
the order completes within the test's wait (60 s), which an hour's redelivery never would.

Killed between attempts: the sandbox answers the response PATCH with 503 until the test clears
the fault, so the worker has uploaded the report and waits to retry the PATCH (the 503's
Retry-After holds the retry back, so the kill lands between attempts) when it is killed. The
sweeper (or a redelivered retry) hands the order to a new worker, which resumes after the last
recorded step: no second slot request, upload or PATCH.

The workers are real `celery -A config worker` processes.
"""

import signal

import pytest

from partner.fulfillment.models import Order, OrderDocument, OrderStatus
from partner.fulfillment.recovery.sweeps import orders_sweep
from partner.sandbox.faults import fault_set, faults_clear
from partner.sandbox.models import FaultRule, Response, UploadSlot
from partner.sandbox.transactions import transaction_create
from tests.helpers.waiting import wait_for
from tests.helpers.workers import worker_kill, worker_start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_worker_killed_mid_fulfillment_resumes_without_a_second_upload_or_patch(demo, service, settings, tmp_path):
    from config.celery import app

    app.control.purge()
    # Retry-After holds the retry back long enough that the kill always lands between attempts,
    # never during one (a worker killed mid-attempt holds its claim until the claim expires).
    fault_set(endpoint="response", status=503, retry_after=8)
    log = tmp_path / "worker.log"

    first = worker_start(service, log)
    try:
        txn = transaction_create(
            product=demo.products["address-verification"], user=demo.users["lender.demo"], loan=demo.loans[2]
        )
        wait_for(
            lambda: (
                OrderDocument.objects.filter(order__transaction_id=txn.id, uploaded_at__isnull=False).exists()
                and Order.objects.filter(transaction_id=txn.id, next_attempt_at__isnull=False).exists()
            ),
            timeout=90,
            message=lambda: f"upload done and PATCH retry scheduled; worker log:\n{log.read_text()[-3000:]}",
        )
    finally:
        worker_kill(first)
    assert first.returncode == -signal.SIGKILL

    faults_clear()
    settings.STALL_SECONDS = 0
    second = worker_start(service, log)
    try:
        order = Order.objects.get(transaction_id=txn.id)
        assert order.status == OrderStatus.IN_PROGRESS

        # On Redis the killed worker's retry is gone with it, and the sweeper hands the order on
        # once the retry is due; a broker that redelivers hands the retry message to the new worker.
        def handed_on():
            done = Order.objects.filter(transaction_id=txn.id, status=OrderStatus.REQUEST_COMPLETED).exists()
            return done or orders_sweep()

        wait_for(handed_on, timeout=60, message="the sweeper or the redelivered retry to pick it up")
        wait_for(
            lambda: Order.objects.filter(transaction_id=txn.id, status=OrderStatus.REQUEST_COMPLETED).exists(),
            timeout=90,
            message=lambda: f"completion; worker log:\n{log.read_text()[-3000:]}",
        )
    finally:
        worker_kill(second)

    assert UploadSlot.objects.filter(transaction_id=txn.id).count() == 1  # one slot request
    assert UploadSlot.objects.filter(transaction_id=txn.id, uploaded_at__isnull=False).count() == 1  # one upload
    assert Response.objects.get(transaction_id=txn.id).patch_count == 1  # one PATCH that landed


def test_worker_killed_during_a_slow_upload_is_handed_back_and_completes_with_one_patch(demo, service, tmp_path):
    from config.celery import app

    app.control.purge()
    held = fault_set(endpoint="upload", latency=20, count=1)  # the first PUT is held long enough to be killed in
    log = tmp_path / "worker.log"

    first = worker_start(service, log)
    try:
        txn = transaction_create(
            product=demo.products["address-verification"], user=demo.users["lender.demo"], loan=demo.loans[2]
        )
        # The service took the rule's one call: the PUT has arrived and is held there.
        wait_for(
            lambda: FaultRule.objects.filter(pk=held.pk, remaining=0).exists(),
            timeout=90,
            message=lambda: f"the upload held by the service; worker log:\n{log.read_text()[-3000:]}",
        )
        assert OrderDocument.objects.filter(order__transaction_id=txn.id, upload_started_at__isnull=False).exists()
    finally:
        worker_kill(first)
    assert first.returncode == -signal.SIGKILL
    assert Order.objects.get(transaction_id=txn.id).claimed_until is not None  # held by a dead worker

    second = worker_start(service, log)
    try:
        # Handed back when the lease runs out, not when the broker redelivers (an hour on Redis).
        wait_for(
            lambda: Order.objects.filter(transaction_id=txn.id, status=OrderStatus.REQUEST_COMPLETED).exists(),
            timeout=60,
            message=lambda: f"completion; worker log:\n{log.read_text()[-3000:]}",
        )
    finally:
        worker_kill(second)

    response = Response.objects.get(transaction_id=txn.id)
    assert response.patch_count == 1  # one PATCH that landed
    referenced = {resource["id"] for resource in response.data["resources"]}
    uploaded = set(
        UploadSlot.objects.filter(transaction_id=txn.id, uploaded_at__isnull=False).values_list("id", flat=True)
    )
    assert referenced and referenced <= uploaded  # the PATCH names what was really uploaded


def test_a_worker_killed_with_several_orders_in_flight_in_its_threads_hands_each_back_once(demo, service, tmp_path):
    """Production's worker runs its orders in threads of one process: several orders wait on the
    service at once in that process, and killing it leaves every one of them to another worker,
    each completed with one upload per slot that its PATCH names and one PATCH."""
    from config.celery import app

    app.control.purge()
    held = fault_set(endpoint="upload", latency=20, count=3)  # three PUTs held at once
    log = tmp_path / "worker.log"

    first = worker_start(service, log)
    try:
        ids = [
            transaction_create(
                product=demo.products["address-verification"], user=demo.users["lender.demo"], loan=demo.loans[2]
            ).id
            for _ in range(3)
        ]
        wait_for(
            lambda: FaultRule.objects.filter(pk=held.pk, remaining=0).exists(),
            timeout=90,
            message=lambda: f"three uploads held by the service at once; worker log:\n{log.read_text()[-3000:]}",
        )
        in_flight = OrderDocument.objects.filter(
            order__transaction_id__in=ids, upload_started_at__isnull=False, uploaded_at__isnull=True
        )
        assert in_flight.count() == 3  # three orders waiting on the service at once ...
        assert _children(first.pid) == []  # ... in one process: no pool processes
    finally:
        worker_kill(first)
    assert Order.objects.filter(transaction_id__in=ids, claimed_until__isnull=False).count() == 3

    second = worker_start(service, log)
    try:
        wait_for(
            lambda: Order.objects.filter(transaction_id__in=ids, status=OrderStatus.REQUEST_COMPLETED).count() == 3,
            timeout=90,
            message=lambda: f"completion of the three; worker log:\n{log.read_text()[-3000:]}",
        )
    finally:
        worker_kill(second)

    for txn in ids:
        response = Response.objects.get(transaction_id=txn)
        assert response.patch_count == 1
        referenced = {resource["id"] for resource in response.data["resources"]}
        uploaded = set(
            UploadSlot.objects.filter(transaction_id=txn, uploaded_at__isnull=False).values_list("id", flat=True)
        )
        assert referenced and referenced <= uploaded


def _children(pid: int) -> list[int]:
    from pathlib import Path

    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]

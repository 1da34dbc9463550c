"""The workers' housekeeping loop: the lease hand-backs of every app, and the chores apps register."""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from partner.core.housekeeping import Chore, housekeeping_loop
from partner.fulfillment.models import Order, OrderStatus
from tests.helpers.waiting import wait_for


def loop_running(chores):
    stop = threading.Event()
    thread = threading.Thread(target=housekeeping_loop, args=(stop,), kwargs={"chores": chores}, daemon=True)
    thread.start()
    return stop, thread


@pytest.mark.django_db(transaction=True)
def test_the_loop_hands_back_an_order_a_dead_worker_held_without_any_chore(tasks_sent):
    left = Order.objects.create(
        transaction_id="t-housekeeping", status=OrderStatus.VALIDATION_REQUESTED,
        claimed_until=timezone.now() - timedelta(seconds=1),
    )  # fmt: skip
    stop, thread = loop_running([])
    try:
        wait_for(lambda: ("fulfillment.order_run", {"order_id": left.pk}) in tasks_sent, timeout=10)
    finally:
        stop.set()
        thread.join(10)
    assert Order.objects.get(pk=left.pk).claimed_until is None


@pytest.mark.django_db(transaction=True)
def test_a_chore_with_more_waiting_runs_again_at_once_and_an_idle_one_waits_its_interval():
    rounds = {"busy": 0, "idle": 0}

    def busy():
        rounds["busy"] += 1
        return rounds["busy"] < 5  # five full batches, then nothing more

    def idle():
        rounds["idle"] += 1
        return False

    stop, thread = loop_running([Chore("busy", busy, interval=60), Chore("idle", idle, interval=60)])
    try:
        wait_for(lambda: rounds["busy"] == 5, timeout=10, message=lambda: f"rounds {rounds}")
    finally:
        stop.set()
        thread.join(10)
    assert rounds == {"busy": 5, "idle": 1}  # the idle one ran once: its next round is a minute away


@pytest.mark.django_db(transaction=True)
def test_a_failing_chore_keeps_none_of_the_others_from_running():
    ran = threading.Event()

    def broken():
        raise ConnectionError("the broker is away")

    def relay():
        ran.set()
        return False

    stop, thread = loop_running([Chore("broken", broken, interval=0.05), Chore("relay", relay, interval=0.05)])
    try:
        assert ran.wait(10)
    finally:
        stop.set()
        thread.join(10)


@pytest.mark.django_db(transaction=True)
def test_a_woken_chore_runs_at_once_not_at_its_interval():
    """A thread that committed work for a chore wakes it (`housekeeping_chore_wake`): its round comes
    now, not a whole interval later; a name no chore has wakes nothing."""
    from partner.core.housekeeping import housekeeping_chore_wake

    rounds = {"woken": 0}

    def woken():
        rounds["woken"] += 1
        return False

    stop, thread = loop_running([Chore("woken", woken, interval=60)])
    try:
        wait_for(lambda: rounds["woken"] == 1, timeout=10)
        housekeeping_chore_wake("no such chore")
        housekeeping_chore_wake("woken")
        wait_for(lambda: rounds["woken"] == 2, timeout=5, message=lambda: f"rounds {rounds}")
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()

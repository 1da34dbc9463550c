"""The one way a task is published: by name, once the transaction that needs it has committed."""

import logging

import pytest
from celery import current_app
from django.db import transaction

from partner.core.enqueue import enqueue_after_commit

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr(current_app, "send_task", lambda name, **kwargs: calls.append((name, kwargs["kwargs"])))
    return calls


def test_nothing_is_published_before_the_commit(sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        enqueue_after_commit("fulfillment.order_run", order_id=7)
        assert sent == []
    assert len(callbacks) == 1
    assert sent == [("fulfillment.order_run", {"order_id": 7})]


def test_a_rolled_back_transaction_publishes_nothing(sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        enqueue_after_commit("fulfillment.order_run", order_id=8)
        raise RuntimeError
    assert sent == []


def test_a_broker_that_refuses_is_logged_not_raised(monkeypatch, caplog, django_capture_on_commit_callbacks):
    def refuse(name, **kwargs):
        raise ConnectionError("broker away")

    monkeypatch.setattr(current_app, "send_task", refuse)
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        enqueue_after_commit("fulfillment.order_run", order_id=9)
    assert "left for the sweep" in caplog.text

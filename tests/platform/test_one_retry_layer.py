"""Inside a Celery task a call to the service is one attempt: the task retries, no process sleeps."""

import pytest
from celery.signals import task_postrun, task_prerun

from partner.platform import client, http
from partner.platform.errors import ServiceRateLimitError, ServiceUnavailableError
from tests.helpers.servers import Reply

TX = "/svc/partner/v2/transactions/t1"


def test_outside_a_task_the_transport_retries(fake_service, settings):
    settings.SVC_MAX_RETRIES = 2
    fake_service.route("GET", TX, Reply(503, {}), Reply(200, {"id": "t1", "request": {}}))
    assert client.get_transaction("t1").id == "t1"
    assert len(fake_service.requests_to("GET", TX)) == 2


def test_with_transport_retries_off_a_503_is_one_attempt(fake_service, settings):
    settings.SVC_MAX_RETRIES = 3
    fake_service.route("GET", TX, Reply(503, {}), Reply(200, {"id": "t1", "request": {}}))
    with http.transport_retries_off(), pytest.raises(ServiceUnavailableError) as caught:
        client.get_transaction("t1")
    assert caught.value.transient
    assert len(fake_service.requests_to("GET", TX)) == 1


def test_a_429_goes_back_to_the_task_with_its_retry_after(fake_service, settings):
    settings.SVC_MAX_RETRIES = 3
    fake_service.route("GET", TX, Reply(429, {}, {"Retry-After": "7"}), Reply(200, {"id": "t1"}))
    with http.transport_retries_off(), pytest.raises(ServiceRateLimitError) as caught:
        client.get_transaction("t1")
    assert caught.value.retry_after == 7.0
    assert len(fake_service.requests_to("GET", TX)) == 1


def test_every_task_runs_with_the_transport_retries_off(fake_service, settings):
    """The project's Celery app turns them off around each task (config/celery.py) and back on after."""
    import config.celery  # noqa: F401 - connects the signal handlers

    settings.SVC_MAX_RETRIES = 3
    fake_service.route("GET", TX, Reply(503, {}), Reply(200, {"id": "t1", "request": {}}))
    task_prerun.send(sender=None, task_id="t", task=None, args=(), kwargs={})
    try:
        with pytest.raises(ServiceUnavailableError):
            client.get_transaction("t1")
    finally:
        task_postrun.send(sender=None, task_id="t", task=None, args=(), kwargs={}, retval=None, state="FAILURE")
    assert len(fake_service.requests_to("GET", TX)) == 1
    assert client.get_transaction("t1").id == "t1"  # after the task: the transport retries again

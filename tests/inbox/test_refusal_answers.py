"""The webhook's refusals answer, byte for byte, what the service reads: `{"message"}` as compact
UTF-8 JSON with the refusal's status (partner/inbox/errors.py), and the endpoint's headers."""

import json

import pytest

from partner.inbox.models import Notification

pytestmark = pytest.mark.django_db(transaction=True)  # the front door, as test_receive.py


def answer_of(response) -> tuple:
    headers = response.headers
    return response.status_code, response.content, headers["Content-Type"], headers["Allow"], headers["Vary"]


def refused(status: int, content: bytes) -> tuple:
    return status, content, "application/json", "POST, OPTIONS", "Accept"


def test_each_refusal_answers_its_status_and_message(signed_post, settings):
    body = json.dumps({"eventType": "created", "meta": {"resourceType": "urn:x", "resourceId": "r"}}).encode()
    assert answer_of(signed_post(body, signature="forged")) == refused(
        401, b'{"message":"Invalid or missing signature"}'
    )
    assert answer_of(signed_post(b"[1]")) == refused(
        400, b'{"message":"Not a webhook notification: the body is not a JSON object"}'
    )
    assert answer_of(signed_post(b"\xff")) == refused(
        400, b'{"message":"Not a webhook notification: the body is not JSON"}'
    )
    assert answer_of(signed_post(body, chunked=True, CONTENT_LENGTH="")) == refused(
        411, b'{"message":"A Content-Length is required"}'
    )
    settings.WEBHOOK_MAX_BYTES = 10
    assert answer_of(signed_post(body)) == refused(413, b'{"message":"Request body too large"}')
    assert not Notification.objects.exists()

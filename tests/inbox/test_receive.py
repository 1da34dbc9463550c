"""POST /v1/webhooks: signature over raw bytes, storage before the answer, dedupe, size and shape."""

import json
import threading

import pytest
import requests

from partner.inbox.models import Notification, NotificationState
from partner.inbox.outbox import notifications_relay
from partner.platform.signatures import signature_compute

pytestmark = pytest.mark.django_db(transaction=True)


def notification(resource_id="txn-1", *, resource_type="urn:svc:platform:transaction", event_type="created", **extra):
    body = {
        "eventTime": "2026-11-22T10:00:00Z",
        "eventType": event_type,
        "meta": {
            "resourceType": resource_type,
            "resourceId": resource_id,
            "instanceId": "address-verification",
            "resourceRef": f"http://127.0.0.1:8000/sandbox/partner/v2/transactions/{resource_id}",
        },
    }
    body.update(extra)
    return body


def raw(body) -> bytes:
    return json.dumps(body).encode()


def test_accepted_notification_is_stored_before_the_answer(signed_post):
    body = raw(notification())
    response = signed_post(body, HTTP_USER_AGENT="svc-webhooks/1")
    assert response.status_code == 202
    stored = Notification.objects.get()
    assert stored.body.encode() == body
    assert stored.resource_id == "txn-1"
    assert stored.event_type == "created"
    assert stored.product_name == "address-verification"
    assert stored.state == NotificationState.RECEIVED  # for the relay
    assert stored.headers["User-Agent"] == "svc-webhooks/1"


def test_signature_header_is_not_stored(signed_post, settings):
    signed_post(raw(notification()))
    headers = {name.lower() for name in Notification.objects.get().headers}
    assert settings.SVC_SIGNATURE_HEADER.lower() not in headers


def test_signed_body_with_unicode_and_odd_spacing_is_verified_over_raw_bytes(signed_post):
    body = (
        '{ "meta":{"resourceRef":"http://x/y","resourceId":"txn-José",'
        '"resourceType":"urn:svc:platform:transaction"},"eventType":"created" ,"eventTime":"2026-11-22T10:00:00Z"}'
    ).encode()
    response = signed_post(body)
    assert response.status_code == 202
    assert Notification.objects.get().resource_id == "txn-José"


def test_signature_of_a_reserialised_body_is_refused(signed_post, settings):
    body = (
        b'{"eventTime": "2026-11-22T10:00:00Z",  "eventType": "created", '
        b'"meta": {"resourceType": "urn:svc:platform:transaction", "resourceId": "t", "resourceRef": "http://x"}}'
    )
    reserialised = json.dumps(json.loads(body), separators=(",", ":")).encode()
    response = signed_post(body, signature=signature_compute(reserialised, settings.SVC_SIGNING_SECRETS[0]))
    assert response.status_code == 401
    assert not Notification.objects.exists()


@pytest.mark.parametrize(
    "signature",
    ["", "not-base64!!", "AAAA", signature_compute(b"other body", "sandbox-webhook-signing-secret"), "sha256=abc"],
)
def test_missing_or_wrong_signature_is_401_and_stores_nothing(signed_post, signature):
    body = raw(notification())
    response = signed_post(body, signature=signature)
    assert response.status_code == 401
    assert body.decode() not in response.content.decode()
    assert not Notification.objects.exists()


def test_one_flipped_byte_is_refused(signed_post, settings):
    body = raw(notification())
    signature = signature_compute(body, settings.SVC_SIGNING_SECRETS[0])
    tampered = body.replace(b"txn-1", b"txn-2")
    assert signed_post(tampered, signature=signature).status_code == 401


def test_rotation_accepts_every_configured_secret(signed_post, settings):
    settings.SVC_SIGNING_SECRETS = ["new-secret-2026", "old-secret-2025"]
    from partner.inbox.intake import signing_secrets_forget

    signing_secrets_forget()
    assert signed_post(raw(notification("a")), secret="old-secret-2025").status_code == 202
    assert signed_post(raw(notification("b")), secret="new-secret-2026").status_code == 202
    assert signed_post(raw(notification("c")), secret="retired-secret").status_code == 401
    signing_secrets_forget()


@pytest.mark.parametrize(
    "body, reason",
    [
        (b"not json at all", "not JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b'{"eventType": "created"}', "meta"),
        (json.dumps({**notification(), "eventTime": "yesterday"}).encode(), "eventTime"),
        # Well formed, not a date (found by the fuzz test: these raised a 500).
        (json.dumps({**notification(), "eventTime": "2026-13-01T00:00:00Z"}).encode(), "eventTime"),
        (json.dumps({**notification(), "eventTime": "0100-3-46T0:0:9"}).encode(), "eventTime"),
        (b"\xff\xfe\x00", "not JSON"),
        # JSON, but UTF-16: json.loads takes it, the stored text could not (was a 500).
        (json.dumps(notification()).encode("utf-16"), "not JSON"),
    ],
)
def test_signed_but_not_a_notification_is_400_and_stores_nothing(signed_post, body, reason):
    response = signed_post(body)
    assert response.status_code == 400
    assert reason in response.json()["message"]
    assert not Notification.objects.exists()


def test_oversized_body_is_413(signed_post, settings):
    settings.WEBHOOK_MAX_BYTES = 1024
    body = raw(notification(padding="x" * 2000))
    response = signed_post(body)
    assert response.status_code == 413
    assert not Notification.objects.exists()


def test_duplicate_delivery_is_accepted_and_stored_once(signed_post):
    body = raw(notification())
    assert signed_post(body).status_code == 202
    assert signed_post(body).status_code == 202
    stored = Notification.objects.get()
    assert stored.duplicates == 1


def test_event_id_decides_what_is_a_duplicate(signed_post):
    first = notification(eventId="evt-1")
    same_id_other_time = {**notification(eventId="evt-1"), "eventTime": "2026-11-22T11:00:00Z"}
    other_id = notification(eventId="evt-2")
    for body in (first, same_id_other_time, other_id):
        assert signed_post(raw(body)).status_code == 202
    assert Notification.objects.count() == 2


def test_unknown_types_are_stored_ignored_and_never_handed_to_the_broker(signed_post, tasks_sent):
    response = signed_post(raw(notification(resource_type="urn:svc:platform:something-else", event_type="updated")))
    assert response.status_code == 202
    assert Notification.objects.get().state == NotificationState.IGNORED
    assert notifications_relay() == 0
    assert tasks_sent == []


def test_simultaneous_duplicates_are_stored_once(live_server, settings):
    """Two copies at the same moment, over real HTTP: the unique key, not a read-then-write, decides."""
    body = raw(notification("txn-race"))
    signature = signature_compute(body, settings.SVC_SIGNING_SECRETS[0])
    barrier = threading.Barrier(4)
    statuses = []

    def deliver():
        barrier.wait()
        response = requests.post(
            f"{live_server.url}/v1/webhooks",
            data=body,
            headers={settings.SVC_SIGNATURE_HEADER: signature, "Content-Type": "application/json"},
            timeout=30,
        )
        statuses.append(response.status_code)

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [202, 202, 202, 202]
    stored = Notification.objects.get()
    assert stored.duplicates == 3


def test_the_request_publishes_nothing_so_a_broker_outage_changes_nothing(signed_post, broker_down, monkeypatch):
    """The broker is down and every publish, on commit or not, is watched: the request makes none."""
    from config.celery import app

    attempts = []
    send_task = app.send_task

    def watched(name, *args, **kwargs):
        attempts.append(name)
        return send_task(name, *args, **kwargs)

    monkeypatch.setattr(app, "send_task", watched)
    response = signed_post(raw(notification("txn-broker-down")))

    assert response.status_code == 202
    assert Notification.objects.get().state == NotificationState.RECEIVED  # left for the relay
    assert attempts == []

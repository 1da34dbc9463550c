"""Fuzzing POST /v1/webhooks with hypothesis: bodies, headers and signatures.

Whatever arrives, the intake answers 202, 400, 401 or 413 (never a 5xx),
stores a row only when it answers 202, and never puts a secret in an answer.
Kept small (max_examples) so that the suite stays quick.
"""

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from partner.inbox.models import Notification
from partner.platform.signatures import signature_compute
from tests.helpers.front_door import wsgi_call

# Through config.wsgi, as production runs it: Django's handler closes a connection left in a transaction.
pytestmark = pytest.mark.django_db(transaction=True)

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

SECRET = "fuzz-signing-secret-0123456789"  # noqa: S105 - the test's own secret
OTHER = "another-secret-not-accepted"  # noqa: S105

text = st.text(max_size=40)
json_scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
json_value = st.recursive(
    json_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
)
# Notification-shaped documents with every field possibly missing, mistyped or odd.
notification_like = st.fixed_dictionaries(
    {},
    optional={
        "eventId": text | json_value,
        "eventTime": st.sampled_from(["2026-11-22T10:00:00Z", "yesterday", "", "2026-13-45T99:00:00Z"]) | json_value,
        "eventType": st.sampled_from(["created", "updated"]) | json_value,
        "meta": json_value
        | st.fixed_dictionaries(
            {},
            optional={
                "resourceType": st.sampled_from(["urn:svc:platform:transaction", "urn:svc:platform:transaction:event"])
                | json_value,
                "resourceId": text | json_value,
                "instanceId": text | json_value,
                "resourceRef": text | json_value,
            },
        ),
    },
)
bodies = (
    st.binary(max_size=300)
    | json_value.map(lambda value: json.dumps(value).encode())
    | notification_like.map(lambda value: json.dumps(value, ensure_ascii=False).encode())
    | st.text(max_size=200).map(lambda value: value.encode("utf-8", "surrogatepass"))
)


def signature_for(body: bytes, how: str, noise: str) -> str | None:
    good = signature_compute(body, SECRET)
    return {
        "valid": good,
        "other secret": signature_compute(body, OTHER),
        "missing": None,
        "empty": "",
        "noise": noise,
        "not base64": good[:-4] + "!!!!",
        "truncated": good[:20],
        "prefixed": "sha256=" + good,
        "doubled": good + "," + good,
        "padded": " " + good + " ",
        "wrong length": base64.b64encode(b"x" * 31).decode(),
        "of another body": signature_compute(body + b" ", SECRET),
    }[how]


SIGNATURES = st.sampled_from(
    [
        "valid",
        "other secret",
        "missing",
        "empty",
        "noise",
        "not base64",
        "truncated",
        "prefixed",
        "doubled",
        "padded",
        "wrong length",
        "of another body",
    ]
)
HEADER_VALUE = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@pytest.fixture
def intake(settings):
    settings.SVC_SIGNING_SECRETS = [SECRET]
    settings.CELERY_TASK_ALWAYS_EAGER = False
    from partner.inbox.intake import signing_secrets_forget

    signing_secrets_forget()
    header = "HTTP_" + settings.SVC_SIGNATURE_HEADER.upper().replace("-", "_")
    secrets = [SECRET, settings.SVC_CLIENT_SECRET, *settings.SVC_SIGNING_SECRETS]

    def post(body: bytes, signature: str | None, content_type: str, extra: dict):
        headers = dict(extra)
        if signature is not None:
            headers[header] = signature
        return wsgi_call(body, CONTENT_TYPE=content_type, **headers)

    yield post, secrets
    signing_secrets_forget()


def answer_checked(response, secrets) -> None:
    assert response.status_code in (202, 400, 401, 413), response.status_code
    content = response.content.decode("utf-8", "replace")
    for secret in secrets:
        assert secret not in content
    for value in response.headers.values():
        for secret in secrets:
            assert secret not in value


@FUZZ
@given(
    body=bodies,
    how=SIGNATURES,
    noise=HEADER_VALUE,
    content_type=st.sampled_from(["application/json", "text/plain", "", "application/x-www-form-urlencoded"]),
    extra=st.dictionaries(
        st.sampled_from(["HTTP_USER_AGENT", "HTTP_X_FORWARDED_FOR", "HTTP_AUTHORIZATION", "HTTP_X_SVC_PAT"]),
        HEADER_VALUE,
        max_size=3,
    ),
)
def test_any_request_gets_a_4xx_or_a_202_with_its_row(intake, body, how, noise, content_type, extra):
    post, secrets = intake
    before = Notification.objects.count()
    response = post(body, signature_for(body, how, noise), content_type, extra)
    answer_checked(response, secrets)
    after = Notification.objects.count()
    if response.status_code == 202:
        assert how in ("valid", "padded")  # only a correct signature is accepted
        notification_id = int(response.headers["X-Notification-Id"])
        stored = Notification.objects.get(pk=notification_id)
        assert after - before in (0, 1)  # 0: a duplicate of an earlier example
        if after - before == 1:
            assert stored.body.encode() == body
        stored_headers = {name.lower() for name in stored.headers}
        assert "authorization" not in stored_headers and "x-svc-pat" not in stored_headers
    else:
        assert after == before  # a refused request stores nothing


@FUZZ
@given(body=notification_like.map(lambda value: json.dumps(value).encode()), flip=st.integers(min_value=0))
def test_one_changed_byte_after_signing_is_refused(intake, body, flip):
    post, secrets = intake
    signature = signature_compute(body, SECRET)
    position = flip % len(body)
    tampered = body[:position] + bytes([body[position] ^ 0x01]) + body[position + 1 :]
    before = Notification.objects.count()
    response = post(tampered, signature, "application/json", {})
    answer_checked(response, secrets)
    assert response.status_code == 401
    assert Notification.objects.count() == before


@FUZZ
@given(size=st.integers(min_value=1, max_value=4096))
def test_bodies_over_the_limit_are_413_and_store_nothing(intake, settings, size):
    post, secrets = intake
    settings.WEBHOOK_MAX_BYTES = 1024
    body = b"{" + b" " * (1024 + size) + b"}"
    before = Notification.objects.count()
    response = post(body, signature_compute(body, SECRET), "application/json", {})
    answer_checked(response, secrets)
    assert response.status_code == 413
    assert Notification.objects.count() == before

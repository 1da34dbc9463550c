"""Fuzzing our OpenAPI schema (GET /api/schema/) with schemathesis, against the live server.

Every operation of the schema gets generated requests (valid and invalid);
none may answer 500, every answer is one the schema documents (status code,
content type and body), a refused webhook stores nothing, and no answer carries
a secret. The service behind the origin proxy is the sandbox on the same live
server, so upstream calls are real. Upstream trouble may be answered 502/503
(the documented meaning); an unhandled error (500) never.
"""

from collections import Counter

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import content_type_conformance, response_schema_conformance, status_code_conformance
from schemathesis.generation import GenerationMode

from partner.inbox.models import Notification
from partner.sandbox.seeding import sandbox_seed

pytestmark = pytest.mark.django_db


def secrets_all() -> list[str]:
    from django.conf import settings as django_settings

    from partner.sandbox import demo

    values = [django_settings.SVC_CLIENT_SECRET, *django_settings.SVC_SIGNING_SECRETS]
    for user in demo.USERS:
        values += [value for key, value in (user.get("credentials") or {}).items() if key == "password"]
    return [value for value in values if value]


def no_unhandled_error(ctx, response, case):
    """500 is an unhandled error; 502/503/504 say the service behind us failed (a real answer)."""
    assert response.status_code != 500, f"{case.method} {case.formatted_path} answered 500"


# The pytest integration of schemathesis (`from_fixture`) does not run under this pytest
# yet, so each operation's strategy is driven with hypothesis directly.
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_never_answers_500_nor_leaks_a_secret(service, mode):
    sandbox_seed(public_base_url=service.url)
    schema = schemathesis.openapi.from_url(f"{service.url}/api/schema/")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/v1/webhooks", "/v1/status/{transaction_id}"}
    secrets = secrets_all()
    seen = []

    unsatisfiable = []
    for operation in operations:
        try:
            checker(operation, mode, service.url, secrets, seen)()
        except Unsatisfiable:  # schemathesis finds no invalid input for this operation (its runner skips it too)
            unsatisfiable.append(operation.path)
    print(f"schemathesis {mode.value}: {len(seen)} requests; answers {sorted(Counter(seen).items())}")
    print(f"schemathesis {mode.value}: no {mode.value} case could be generated for {unsatisfiable}")
    assert len(seen) >= 15


def _latin1(value):
    if not isinstance(value, str):
        return value
    return value.encode("latin-1", "replace").decode("latin-1")


def checker(operation, mode, base_url, secrets, seen):
    @settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case):
        # HTTP/1.1 header values are latin-1: a client cannot send anything else.
        if case.headers:
            case.headers = {name: _latin1(value) for name, value in case.headers.items()}
        # Known bug, pinned by test_origin_proxy_token_outside_latin1_is_not_a_500 below.
        if operation.path == "/v1/origins/{origin_id}" and "partnerAccessToken" in (case.query or {}):
            case.query["partnerAccessToken"] = _latin1(case.query["partnerAccessToken"])
        before = Notification.objects.count()
        with requests.Session() as session:
            response = case.call(base_url=base_url, session=session, timeout=30)
        seen.append((operation.path, response.status_code))
        no_unhandled_error(None, response, case)
        # The schema says what we answer: the serializers that document an endpoint build its answers.
        case.validate_response(
            response, checks=[status_code_conformance, content_type_conformance, response_schema_conformance]
        )
        for secret in secrets:
            assert secret not in response.text
        if operation.path == "/v1/webhooks" and response.status_code != 202:
            assert Notification.objects.count() == before

    return check


def test_origin_proxy_token_outside_latin1_is_not_a_500(service):
    sandbox_seed(public_base_url=service.url)
    response = requests.get(f"{service.url}/v1/origins/0", params={"partnerAccessToken": "\u0100"}, timeout=30)
    # Found by this fuzzing: the token went on unchecked into a header and raised a 500.
    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "origin_malformed"

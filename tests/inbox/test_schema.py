"""The webhook body the OpenAPI schema documents is the one the parser accepts.

The intake parses the raw bytes itself (`notification_parse`, before anything else), so the
serializer in `inbox/views.py` only documents the body: this test holds the two to the same
rules, field by field, so the schema cannot say anything false about what we accept.
"""

import json

import pytest
from drf_spectacular.generators import SchemaGenerator

from partner.inbox.notifications import NotANotification, notification_parse

VALID = {
    "eventId": "e-1",
    "eventTime": "2026-11-23T10:00:00Z",
    "eventType": "created",
    "meta": {
        "resourceType": "urn:svc:platform:transaction",
        "resourceId": "t-1",
        "instanceId": "address-verification",
        "resourceRef": "http://127.0.0.1:8000/sandbox/partner/v2/transactions/t-1",
    },
}


def documented_body() -> tuple[set[str], set[str], set[str], set[str]]:
    """(required, optional) top-level fields and (required, optional) meta fields, as the schema says."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/v1/webhooks"]["post"]
    (content,) = operation["requestBody"]["content"].values()  # the view reads any content type
    ref = content["schema"]["$ref"]
    components = schema["components"]["schemas"]
    body = components[ref.rsplit("/", 1)[1]]
    meta_schema = body["properties"]["meta"]
    if "$ref" in meta_schema:
        meta_schema = components[meta_schema["$ref"].rsplit("/", 1)[1]]
    elif "allOf" in meta_schema:
        meta_schema = components[meta_schema["allOf"][0]["$ref"].rsplit("/", 1)[1]]

    def split(part):
        required = set(part.get("required", []))
        return required, set(part["properties"]) - required

    top_required, top_optional = split(body)
    meta_required, meta_optional = split(meta_schema)
    return top_required, top_optional, meta_required, meta_optional


def parses(body: dict) -> bool:
    try:
        notification_parse(json.dumps(body).encode())
    except NotANotification:
        return False
    return True


def test_the_documented_fields_are_the_parsed_ones():
    top_required, top_optional, meta_required, meta_optional = documented_body()
    assert top_required | top_optional == set(VALID)
    assert meta_required | meta_optional == set(VALID["meta"])
    assert parses(VALID)


@pytest.mark.parametrize("where", ["top", "meta"])
def test_each_required_field_is_required_and_each_optional_one_is_not(where):
    top_required, top_optional, meta_required, meta_optional = documented_body()
    required, optional = (top_required, top_optional) if where == "top" else (meta_required, meta_optional)
    assert required, "the schema documents required fields"
    for name in sorted(required | optional):
        body = json.loads(json.dumps(VALID))
        part = body if where == "top" else body["meta"]
        del part[name]
        assert parses(body) == (name in optional), (
            f"{where}.{name}: the schema says {'optional' if name in optional else 'required'}"
        )

"""The disclosure status action rules and the action entitlement check."""

import pytest

from partner.platform import formats
from partner.platform.formats import (
    DISCLOSURE_ACTION,
    DISCLOSURE_FORMAT,
    LOAN_FORMAT,
    action_entitled,
    disclosure_result_violations,
)


def result(**details):
    return {"format": DISCLOSURE_FORMAT, "action": DISCLOSURE_ACTION, "details": details}


def fields(violations):
    return sorted(v.field for v in violations)


def test_constants_are_the_spec_values():
    assert LOAN_FORMAT == "application/vnd.plm-2.0.0+json"
    assert DISCLOSURE_FORMAT == "application/vnd.disclosure.update-status-1.0.0.json"
    assert DISCLOSURE_ACTION == "UPDATE_DISCLOSURE_STATUS"


def test_status_active_with_or_without_comments_conforms():
    assert disclosure_result_violations(result(status="active")) == []
    assert disclosure_result_violations(result(status="active", comments="sent on 2024-01-02")) == []


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (result(), "result.details.status"),
        (result(status="inactive"), "result.details.status"),
        (result(status="ACTIVE"), "result.details.status"),
        (result(status="active", date="2024-01-01"), "result.details.date"),
        (result(status="active", comments=7), "result.details.comments"),
        ({**result(status="active"), "format": "application/json"}, "result.format"),
        ({**result(status="active"), "format": DISCLOSURE_FORMAT.replace(".json", "+json")}, "result.format"),
        ({**result(status="active"), "action": "update_disclosure_status"}, "result.action"),
        ({"format": DISCLOSURE_FORMAT, "action": DISCLOSURE_ACTION}, "result.details"),
        ({**result(), "details": "active"}, "result.details"),
        ("not an object", "result"),
    ],
)
def test_each_rule_is_reported(value, field):
    assert field in fields(disclosure_result_violations(value))


def test_every_violation_is_reported_at_once():
    bad = {"format": "x", "action": "y", "details": {"status": "done", "extra": 1}}
    assert fields(disclosure_result_violations(bad)) == [
        "result.action",
        "result.details.extra",
        "result.details.status",
        "result.format",
    ]


PRODUCT = {
    "entitlements": {
        "data": {
            "transaction": [
                {"requestTypes": ["ACCEPTED_ORDER"], "response": {"results": []}},
                {
                    "requestTypes": ["NEW_REQUEST"],
                    "response": {"results": [{"action": DISCLOSURE_ACTION, "formats": [DISCLOSURE_FORMAT]}]},
                },
            ]
        }
    }
}


def test_action_entitlement_is_per_request_type_action_and_format():
    assert action_entitled(PRODUCT, request_type="NEW_REQUEST", action=DISCLOSURE_ACTION, fmt=DISCLOSURE_FORMAT)
    assert not action_entitled(PRODUCT, request_type="ACCEPTED_ORDER", action=DISCLOSURE_ACTION, fmt=DISCLOSURE_FORMAT)
    assert not action_entitled(PRODUCT, request_type="NEW_REQUEST", action="OTHER", fmt=DISCLOSURE_FORMAT)
    assert not action_entitled(PRODUCT, request_type="NEW_REQUEST", action=DISCLOSURE_ACTION, fmt="application/json")
    assert not action_entitled({}, request_type="NEW_REQUEST", action=DISCLOSURE_ACTION, fmt=DISCLOSURE_FORMAT)


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("property", ("property",)),
        ("loan.property", ("property",)),  # the spec's own form
        ("loan.property.city", ("property", "city")),
        ("loan", ()),
        ("loan..city", None),
        ("", None),
        (7, None),
    ],
)
def test_a_data_entitlement_field_is_read_as_a_loan_path(field, path):
    assert formats.loan_path(field) == path


def test_a_response_entitlement_names_its_fields_either_way():
    product = {
        "entitlements": {
            "data": {
                "transaction": [
                    {"requestTypes": ["NEW_REQUEST"], "response": {"fields": ["loan.appraisal", "property"]}}
                ]
            }
        }
    }
    assert formats.response_loan_fields(product, request_type="NEW_REQUEST") == ["appraisal", "property"]

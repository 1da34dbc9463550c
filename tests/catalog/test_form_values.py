"""A delivered value in words, by the schema that describes it: one formatting for every product."""

import datetime
from decimal import Decimal

from partner.catalog.form_values import date_text, loan_merged, loan_values_shown, value_text, values_shown
from partner.catalog.response_forms import DEFAULT_RESPONSE_FORM, SEED_FIELD_SCHEMAS, loan_field_schemas

APPRAISAL = DEFAULT_RESPONSE_FORM["properties"]["appraisal"]
MONEY = {"type": "number", "format": "money", "title": "Fee"}


def test_money_is_dollars_with_cents_only_when_there_are_any():
    assert value_text(MONEY, 455000) == "$455,000"
    assert value_text(MONEY, 1250.5) == "$1,250.50"
    assert value_text(MONEY, Decimal("812000.00")) == "$812,000"
    assert value_text(MONEY, "not a number") == "not a number"


def test_dates_are_written_in_words_and_anything_else_stays_as_sent():
    assert value_text({"type": "string", "format": "date"}, "2026-11-27") == "November 27, 2026"
    assert date_text(datetime.date(2026, 1, 5)) == "January 5, 2026"
    assert value_text({"type": "string", "format": "date"}, "next Tuesday") == "next Tuesday"


def test_choices_read_as_their_titles_and_enumerations_in_words():
    condition = APPRAISAL["properties"]["condition"]
    assert value_text(condition, "C3") == "C3: well maintained, normal wear"
    usage = SEED_FIELD_SCHEMAS["property"]["properties"]["propertyUsageType"]
    assert value_text(usage, "PrimaryResidence") == "Primary residence"
    assert value_text({"type": "boolean", "title": "Occupied"}, False) == "No"
    assert value_text({"type": "integer", "title": "Rooms"}, 12000) == "12,000"


def test_an_object_reads_in_the_forms_order_its_empty_values_left_out():
    shown = values_shown(
        APPRAISAL,
        {"comments": "Fine.", "condition": "", "effectiveDate": "2026-11-27", "appraisedValue": 455000},
        name="appraisal",
    )
    assert [(v["label"], v["text"]) for v in shown] == [
        ("Appraised value", "$455,000"),
        ("Effective date", "November 27, 2026"),
        ("Comments", "Fine."),
    ]


def test_a_field_no_form_describes_is_still_shown_under_its_name_in_words():
    groups = loan_values_shown(loan_field_schemas(None, None), {"inspection": {"accessNotes": "Key at the office"}})
    assert groups == [
        {
            "field": "inspection",
            "title": "Inspection",
            "values": [{"name": "inspection.accessNotes", "label": "Access notes", "text": "Key at the office"}],
        }
    ]


def test_later_deliveries_replace_earlier_values_key_by_key():
    merged = loan_merged(
        [{"appraisal": {"appraisedValue": 1, "condition": "C2"}}, {"appraisal": {"appraisedValue": 2}}]
    )
    assert merged == {"appraisal": {"appraisedValue": 2, "condition": "C2"}}

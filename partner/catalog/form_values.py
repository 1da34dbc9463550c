"""What a delivered loan value reads as, by the form that describes it: one place for every product.

A delivery's loan fields (`Delivery.loan`, such as `{"appraisal": {"appraisedValue": 455000, ...}}`)
are described by the product's response form (`response_forms`): each value's `title` is its label,
and its type and `format` say how it is written. The lender's panel and the staff's confirmation of a
delivery both show values through here, so a figure reads the same wherever it appears:

- `format: money`: US dollars, cents only when there are any ("$455,000", "$1,250.50");
- `format: date`: the day in words ("November 27, 2026"); a value that is not a date stays as sent;
- an enumeration: the title of its `oneOf` choice ("C3: well maintained, normal wear"), or for an
  `enum` the value in words (`value_label`: "PrimaryResidence" -> "Primary residence");
- a boolean: Yes or No; an integer or a number: with thousands separators;
- an object: its values in the form's order (`x-order`), each labelled, nested objects flattened.

Empty values (None, "") are left out. A field no schema describes (the product's form changed since
the delivery) keeps its values, labelled from their names (`loan_field_label`), so nothing delivered
is hidden.
"""

import datetime
from decimal import Decimal, InvalidOperation

from partner.catalog.response_forms import ordered_properties
from partner.platform.loan_labels import loan_field_label, value_label


def money_text(value) -> str:
    """US dollars, cents only when there are any ("$455,000", "$1,250.50")."""
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if amount == amount.to_integral_value():
        return f"{sign}${amount:,.0f}"
    return f"{sign}${amount:,.2f}"


def date_text(value) -> str:
    """A date in words ("November 27, 2026"); text that is not an ISO date comes back as it is."""
    if isinstance(value, datetime.datetime):
        value = value.date()
    if not isinstance(value, datetime.date):
        try:
            value = datetime.date.fromisoformat(str(value))
        except ValueError:
            return str(value)
    return f"{value:%B} {value.day}, {value:%Y}"


def _number(value) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    if amount == amount.to_integral_value():
        return f"{amount:,.0f}"
    return f"{amount:,f}"


def value_text(schema: dict | None, value) -> str:
    """One scalar value as its form says to write it."""
    schema = schema if isinstance(schema, dict) else {}
    for choice in schema.get("oneOf") or []:
        if isinstance(choice, dict) and choice.get("const") == value and choice.get("title"):
            return str(choice["title"])
    if isinstance(value, bool):
        return "Yes" if value else "No"
    kind, fmt = schema.get("type"), schema.get("format")
    if fmt == "money":
        return money_text(value)
    if fmt == "date":
        return date_text(value)
    if kind in ("number", "integer") or isinstance(value, int | float | Decimal):
        return _number(value)
    if "enum" in schema:
        return str(value_label(value))
    return str(value)


def _empty(value) -> bool:
    return value is None or value == "" or value == {} or value == []


def values_shown(schema: dict | None, value, *, name: str = "") -> list[dict]:
    """`[{"name", "label", "text"}]` of a value under its schema, in the form's order; an object's
    values flattened (`name`: the dotted path), empty ones left out."""
    schema = schema if isinstance(schema, dict) else {}
    if isinstance(value, dict):
        described = ordered_properties(schema) if schema.get("properties") else []
        known = {key for key, _ in described}
        pairs = described + [(key, None) for key in value if key not in known]
        shown = []
        for key, child in pairs:
            if key not in value or _empty(value[key]):
                continue
            shown += values_shown(child, value[key], name=f"{name}.{key}" if name else key)
        return shown
    label = schema.get("title") or loan_field_label(name.rsplit(".", 1)[-1])
    if isinstance(value, list):
        text = ", ".join(value_text(schema.get("items"), item) for item in value if not _empty(item))
        return [{"name": name, "label": label, "text": text}] if text else []
    if _empty(value):
        return []
    return [{"name": name, "label": label, "text": value_text(schema, value)}]


def loan_values_shown(schemas: dict[str, dict | None], loan) -> list[dict]:
    """A delivery's loan fields in words: `[{"field", "title", "values": [{name, label, text}]}]`, one
    group per field that holds a value, in the order of `schemas` (the product's form first), then any
    field no schema describes."""
    if not isinstance(loan, dict):
        return []
    names = [name for name in schemas if name in loan] + [name for name in loan if name not in schemas]
    groups = []
    for name in names:
        schema = schemas.get(name)
        values = values_shown(schema, loan[name], name=name)
        if not values:
            continue
        title = (schema or {}).get("title") or loan_field_label(name)
        groups.append({"field": name, "title": title, "values": values})
    return groups


def loan_merged(loans: list) -> dict:
    """What the lender holds after several deliveries, oldest first: each later value replaces the
    earlier one of the same field, objects merged key by key."""

    def merge(into: dict, value: dict) -> dict:
        for key, item in value.items():
            if isinstance(item, dict) and isinstance(into.get(key), dict):
                into[key] = merge(dict(into[key]), item)
            else:
                into[key] = item
        return into

    merged: dict = {}
    for loan in loans:
        if isinstance(loan, dict):
            merged = merge(merged, loan)
    return merged

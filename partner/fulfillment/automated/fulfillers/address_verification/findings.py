"""The subject property as received and as corrected, field by field: what the report's table and
the lender's panel show, in the lender's words (`partner.platform.loan_labels`)."""

from partner.platform.loan_labels import PROPERTY_FIELD_LABELS, field_label, property_value


def property_findings(received: dict, corrected: dict) -> list[dict]:
    """One `{"field", "label", "before", "after", "changed"}` per field of either side: the spec's
    fields in reading order, then any others (sorted), so the property shows exactly as received.
    A value missing on one side is None."""
    known = list(PROPERTY_FIELD_LABELS)
    extra = sorted((set(received) | set(corrected)) - set(known))
    findings = []
    for name in [*known, *extra]:
        if name not in received and name not in corrected:
            continue
        before, after = received.get(name), corrected.get(name)
        findings.append(
            {
                "field": name,
                "label": field_label(name),
                "before": property_value(name, before),
                "after": property_value(name, after),
                "changed": before != after,
            }
        )
    return findings

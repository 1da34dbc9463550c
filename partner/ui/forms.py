"""The order options a lender chooses in the new order form: the fulfiller's own Django form.

The page builds its fields from `order_options_schema` (so browser-side checks
and labels match) and posts the chosen values back to be cleaned by the same
form before it asks the host to create the transaction. The cleaned values
become `request.options` of the transaction, which the fulfiller reads.
"""

from django import forms

from partner.fulfillment.automated.fulfillers import FULFILLERS


def order_options_form_class(fulfiller: str) -> type[forms.Form]:
    """The options form of a fulfiller (each fulfiller class owns its form); for a key that is no
    longer registered, the partner's main product's (the first registered)."""
    fulfiller_class = FULFILLERS.get(fulfiller) or next(iter(FULFILLERS.values()))
    return fulfiller_class.options_form


def _field_kind(field: forms.Field) -> str:
    if isinstance(field, forms.BooleanField):
        return "checkbox"
    if isinstance(field, forms.ChoiceField):
        return "select"
    if isinstance(field.widget, forms.Textarea):
        return "textarea"
    return "text"


def order_options_schema(fulfiller: str) -> list[dict]:
    """Describe the options form as plain data the page renders (labels, kinds, limits)."""
    form = order_options_form_class(fulfiller)()
    schema = []
    for name, field in form.fields.items():
        item = {
            "name": name,
            "label": str(field.label),
            "kind": _field_kind(field),
            "required": bool(field.required),
            "help": str(field.help_text or ""),
            "initial": field.initial,
        }
        if isinstance(field, forms.ChoiceField):
            item["choices"] = [{"value": str(value), "label": str(label)} for value, label in field.choices]
        if getattr(field, "max_length", None):
            item["maxLength"] = field.max_length
        schema.append(item)
    return schema

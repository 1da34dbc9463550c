"""The order options a lender chooses in the new order form, one Django form per fulfiller.

The page builds its fields from `order_options_schema` (so browser-side checks
and labels match) and posts the chosen values back to be cleaned by the same
form before it asks the host to create the transaction. The cleaned values
become `request.options` of the transaction, which the fulfiller reads.
"""

from django import forms


class AddressVerificationOptionsForm(forms.Form):
    """Options of the address verification product.

    Every order checks street, city, state and county against the ZIP code and
    attaches the PDF report, so the lender only adds a note; the note travels
    with the request on the service, where the lender's team reads it.
    """

    comments = forms.CharField(
        label="Notes for the order (optional)",
        required=False,
        max_length=500,
        widget=forms.Textarea,
        help_text="Up to 500 characters.",
    )


class DisclosureStatusOptionsForm(forms.Form):
    """Options of the disclosure delivery product: the comment sent with the status update."""

    comments = forms.CharField(
        label="Comment for the disclosure tracking log (optional)",
        required=False,
        max_length=500,
        widget=forms.Textarea,
        help_text="Up to 500 characters.",
    )


ORDER_OPTION_FORMS: dict[str, type[forms.Form]] = {
    "address_verification": AddressVerificationOptionsForm,
    "disclosure_status": DisclosureStatusOptionsForm,
}


def order_options_form_class(fulfiller: str) -> type[forms.Form]:
    """The options form of a fulfiller; address verification is the partner's main product."""
    return ORDER_OPTION_FORMS.get(fulfiller, AddressVerificationOptionsForm)


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

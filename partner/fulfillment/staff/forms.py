"""The forms of the staff's order page: what staff type in, shaped and checked before a service is called.

The forms check the shape of the input (a file's kind and size, the loan fields the product's
response data entitlement allows, each value typed and checked against its form); the rules stay
in the services (`partner.fulfillment.staff.services`), which decide again on every action.

A form that makes something (documents, a status update, a delivery, a decline) carries a one-time
key (`once`), drawn with the page: the same form sent twice (a double click, a resent POST) acts
once; a refused action frees its key, so the corrected form can be sent again.
"""

import datetime
import uuid
from dataclasses import dataclass
from dataclasses import field as dc_field
from decimal import Decimal

from django import forms
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.forms.renderers import BaseRenderer
from django.template import engines
from django.template.defaultfilters import filesizeformat

from partner.catalog import response_forms
from partner.catalog.form_values import date_text, money_text
from partner.fulfillment.models import Order
from partner.fulfillment.staff import services as staff
from partner.platform import formats
from partner.platform.loan_labels import loan_field_label, value_label

DOCUMENT_ACCEPT = ",".join(["application/pdf", "image/png", "image/jpeg", ".pdf", ".png", ".jpg", ".jpeg"])
ONCE_SECONDS = 24 * 3600


class StaffFormRenderer(BaseRenderer):
    """The staff's forms draw their inputs, labels and error lists with Django's own Jinja2 templates for
    forms, and each field's row of the order page (`{{ field.as_field_group }}`: errors, label, input,
    help, as the admin draws a form row) with ours: the order page draws ~20 inputs, each one to four
    templates, and Jinja2 draws them in about half the CPU of Django's template language
    (docs/performance.md, "What a staff delivery costs" and "The web side, third round"). Drawn by the
    `jinja2` engine of TEMPLATES, the one Jinja2 environment of our pages (`partner.core.templating`),
    which finds Django's form templates in `django.forms`, an installed app for that."""

    field_template_name = "fulfillment/stafforder/field.html"

    def get_template(self, template_name):
        return engines["jinja2"].get_template(template_name)


STAFF_FORM_RENDERER = StaffFormRenderer()


class SentOnceForm(forms.Form):
    default_renderer = STAFF_FORM_RENDERER
    once = forms.RegexField(regex=r"^[0-9a-f]{32}$", required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["once"].initial = uuid.uuid4().hex

    def _once_key(self) -> str | None:
        value = self.cleaned_data.get("once")
        return f"staff-form-once:{value}" if value else None

    def claim(self) -> bool:
        """Mark this form as acted on; False when it already was (the same form sent twice)."""
        key = self._once_key()
        return key is None or cache.add(key, True, timeout=ONCE_SECONDS)

    def release(self) -> None:
        """The action was refused: the same form may be sent again once corrected."""
        key = self._once_key()
        if key is not None:
            cache.delete(key)


# Documents ---------------------------------------------------------------------------------------


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """One or more files (Django's documented pattern); cleans to a list."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": DOCUMENT_ACCEPT}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data] if data else []
        if not files and self.required:
            raise ValidationError(self.error_messages["required"], code="required")
        return [super(MultipleFileField, self).clean(upload, initial) for upload in files]


def document_problem(upload) -> str | None:
    """Why `upload` cannot be attached (the service's limits: kind by content, size), or None."""
    limit = settings.DOCUMENT_MAX_BYTES
    if upload.size > limit:
        return f"{upload.name} is {filesizeformat(upload.size)}; at most {filesizeformat(limit)} may be attached."
    upload.seek(0)
    head = upload.read(16)
    upload.seek(0)
    if staff.document_kind(head) is None:
        return f"{upload.name} is not a PDF, PNG or JPEG document (told by its content, not its name)."
    return None


def _document_help() -> str:
    return f"PDF, PNG or JPEG, at most {filesizeformat(settings.DOCUMENT_MAX_BYTES)} each."


class UploadForm(SentOnceForm):
    prefix = "upload"
    files = MultipleFileField(label="Documents")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["files"].help_text = _document_help()

    def clean_files(self):
        files = self.cleaned_data["files"]
        problems = [problem for problem in map(document_problem, files) if problem]
        if problems:
            raise ValidationError(problems)
        return files


class ReplaceForm(SentOnceForm):
    """A new file for one waiting document (its prefix names the document)."""

    file = forms.FileField(label="Replace with", widget=forms.ClearableFileInput(attrs={"accept": DOCUMENT_ACCEPT}))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        problem = document_problem(upload)
        if problem:
            raise ValidationError(problem)
        return upload


def replace_form(document_id: int, data=None, files=None) -> ReplaceForm:
    return ReplaceForm(data, files, prefix=f"replace-{document_id}")


# What the lender reads ---------------------------------------------------------------------------


class StatusUpdateForm(SentOnceForm):
    prefix = "status"
    partner_status = forms.CharField(
        label="Status for the lender",
        required=False,  # the service says what is wrong with it (empty, too long)
        widget=forms.TextInput(attrs={"size": 80, "maxlength": staff.PARTNER_STATUS_MAX}),
        help_text="What the lender reads on their order, for example “Inspection scheduled for Tuesday 10:00”.",
    )


class DeclineForm(SentOnceForm):
    prefix = "decline"
    reason = forms.CharField(
        label="Reason",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80, "maxlength": staff.DECLINE_REASON_MAX}),
        help_text="The lender reads it. Declining ends the order: nothing more can be sent afterwards.",
    )


# A delivery ---------------------------------------------------------------------------------------

KIND_CHOICES = [
    ("partial", "Send what is ready now: the order stays open for more"),
    ("final", "Final delivery: the order is done, nothing more can be sent afterwards"),
]
DISCLOSURE_STATUS_LABELS = {"active": "Active: the disclosures are out to the borrower"}


@dataclass
class LoanGroup:
    """One group of a delivery's loan inputs: an object of a loan field (nested ones have their own)."""

    legend: str
    help: str
    names: list[str]  # the form's field names, in order
    fields: list = dc_field(default_factory=list)  # bound fields, filled for the template


@dataclass(frozen=True)
class Undescribed:
    """A loan field the product may send that no form describes (a staff admin adds it to the product)."""

    name: str
    label: str


def _input_name(path: list[str]) -> str:
    return "__".join(["loan", *path])


def _choices(schema: dict, initial) -> list[tuple[str, str]] | None:
    if "oneOf" in schema:
        choices = [(str(choice["const"]), choice["title"]) for choice in schema["oneOf"]]
    elif "enum" in schema:
        choices = [(str(value), value_label(value)) for value in schema["enum"]]
    else:
        return None
    if initial and initial not in {value for value, _ in choices}:  # as the lender sent it
        choices.append((initial, value_label(initial)))
    return [("", "Not given"), *choices]


def schema_input(schema: dict, initial=None) -> forms.Field:
    """The typed input of one value of a response form (`partner.catalog.response_forms`): a date,
    an amount, a choice, a number, text. Every input may stay empty (a partial delivery sends what
    is ready); a group's required values are required once the group is sent (`loan_field_problems`)."""
    common = {"label": schema["title"], "help_text": schema.get("description", ""), "required": False}
    kind, fmt = schema.get("type"), schema.get("format")
    text = "" if initial is None or isinstance(initial, dict | list) else str(initial)
    choices = _choices(schema, text)
    if choices is not None:
        return forms.ChoiceField(choices=choices, initial=text, **common)
    if kind == "string" and fmt == "date":
        return forms.DateField(widget=forms.DateInput(attrs={"type": "date"}), initial=text, **common)
    if kind == "number" and fmt == "money":
        common["help_text"] = common["help_text"] or "In US dollars."
        return forms.DecimalField(
            decimal_places=2,
            min_value=schema.get("minimum"),
            widget=forms.NumberInput(attrs={"step": "0.01", "class": "staff-money"}),
            initial=text,
            **common,
        )
    if kind == "number":
        return forms.DecimalField(
            min_value=schema.get("minimum"), max_value=schema.get("maximum"), initial=text, **common
        )
    if kind == "integer":
        return forms.IntegerField(
            min_value=schema.get("minimum"), max_value=schema.get("maximum"), initial=text, **common
        )
    if kind == "boolean":
        choices = [("", "Not given"), ("true", "Yes"), ("false", "No")]
        initial = {True: "true", False: "false"}.get(initial, "")
        return forms.TypedChoiceField(
            choices=choices, coerce=lambda value: value == "true", empty_value=None, initial=initial, **common
        )
    limit = schema.get("maxLength")
    widget = forms.Textarea(attrs={"rows": 3}) if limit is None or limit > response_forms.LONG_TEXT else None
    return forms.CharField(max_length=limit, initial=text, **({"widget": widget} if widget else {}), **common)


def _json_value(value):
    """A cleaned input as the loan's JSON holds it: dates as ISO dates, amounts as numbers."""
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, str):
        return value.strip()
    return value


class DeliveryForm(SentOnceForm):
    """A partial or final delivery: what the lender reads, the loan fields the product's response data
    entitlement allows (typed inputs drawn from each field's form, one group per object), and the
    disclosure result when the product holds that action."""

    prefix = "deliver"
    kind = forms.ChoiceField(label="What you send", choices=KIND_CHOICES, widget=forms.RadioSelect)
    partner_status = forms.CharField(
        label="Status for the lender",
        required=False,
        widget=forms.TextInput(attrs={"size": 80, "maxlength": staff.PARTNER_STATUS_MAX}),
        help_text="What the lender reads on their order, for example “Appraisal report delivered”.",
    )

    def __init__(self, *args, schemas: dict[str, dict | None], request_loan: dict, result_offered: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.schemas = {name: schema for name, schema in schemas.items() if schema is not None}
        self.undescribed = [
            Undescribed(name, loan_field_label(name)) for name, schema in schemas.items() if schema is None
        ]
        self.result_offered = result_offered
        self.request_loan = request_loan  # what the inputs start from: a value left as it was is not sent
        self.groups: list[LoanGroup] = []
        for name, schema in self.schemas.items():
            self._add_group(
                [name], schema, request_loan.get(name), legend=schema.get("title") or loan_field_label(name)
            )
        if result_offered:
            self.fields["result_status"] = forms.ChoiceField(
                label="Disclosure status",
                required=False,
                choices=[
                    ("", "No result"),
                    *((status, DISCLOSURE_STATUS_LABELS.get(status, status)) for status in formats.DISCLOSURE_STATUSES),
                ],
            )
            self.fields["result_comments"] = forms.CharField(
                label="Comments", required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80})
            )

    def _add_group(self, path: list[str], schema: dict, sent, *, legend: str) -> None:
        sent = sent if isinstance(sent, dict) else {}
        group = LoanGroup(legend=legend, help=schema.get("description", ""), names=[])
        self.groups.append(group)
        for key, child in response_forms.ordered_properties(schema):
            if child.get("type") == "object":
                self._add_group([*path, key], child, sent.get(key), legend=f"{legend}: {child['title']}")
                continue
            name = _input_name([*path, key])
            self.fields[name] = schema_input(child, sent.get(key))
            group.names.append(name)

    @classmethod
    def for_order(cls, order: Order, data=None) -> "DeliveryForm":
        product = staff.order_product(order)
        request_loan = order.request.get("loan") if isinstance(order.request, dict) else None
        offered = formats.action_entitled(
            product.raw if product is not None else {},
            action=formats.DISCLOSURE_ACTION,
            request_type=order.request_type or "NEW_REQUEST",
            fmt=formats.DISCLOSURE_FORMAT,
        )
        return cls(
            data,
            schemas=staff.loan_field_schemas(order),
            request_loan=request_loan if isinstance(request_loan, dict) else {},
            result_offered=offered,
        )

    def loan_groups(self) -> list[LoanGroup]:
        """The groups of loan inputs with their bound fields, for the page's fieldsets."""
        for group in self.groups:
            group.fields = [self[name] for name in group.names]
        return self.groups

    def result_fields(self) -> list:
        return [self["result_status"], self["result_comments"]] if self.result_offered else []

    def clean(self):
        data = super().clean()
        self._refuse_fields_not_offered()
        data["loan_data"] = self._loan(data)
        for name, value in data["loan_data"].items():
            for problem in response_forms.loan_field_problems(name, self.schemas[name], value):
                self.add_error(None, problem)
        status = data.get("result_status") or ""
        comments = (data.get("result_comments") or "").strip()
        if comments and not status:
            self.add_error("result_status", "Choose the status to send a result with comments.")
        details = {"status": status, **({"comments": comments} if comments else {})}
        data["result"] = (
            {"format": formats.DISCLOSURE_FORMAT, "action": formats.DISCLOSURE_ACTION, "details": details}
            if status
            else None
        )
        return data

    def _loan(self, data) -> dict:
        loan = {}
        for name, schema in self.schemas.items():
            value = self._object(data, [name], schema, self.request_loan.get(name))
            if value:
                loan[name] = value
        return loan

    def _object(self, data, path: list[str], schema: dict, sent) -> dict:
        """The values typed for one object that differ from what the lender sent (the inputs start from
        it: a value left as it was is not sent again), empty ones left out (an empty object: nothing)."""
        sent = sent if isinstance(sent, dict) else {}
        value = {}
        for key, child in response_forms.ordered_properties(schema):
            if child.get("type") == "object":
                inner = self._object(data, [*path, key], child, sent.get(key))
                if inner:
                    value[key] = inner
                continue
            typed = data.get(_input_name([*path, key]))
            if typed not in (None, "") and _json_value(typed) != sent.get(key):
                value[key] = _json_value(typed)
        return value

    def _refuse_fields_not_offered(self) -> None:
        """A loan input posted that the form does not offer (the product's form or entitlement changed
        since the page was drawn)."""
        named = set()
        for key in self.data:
            name = key.removeprefix(self.add_prefix(""))
            if key.startswith(self.add_prefix("loan__")) and name not in self.fields:
                named.add(name.split("__")[1])
        for name in sorted(named):
            self.add_error(None, f"The product may not send {loan_field_label(name)} ({name}): reload the page.")

    def summary(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """What a valid form sends, as (group legend, [(label, value)]) for the confirmation: amounts and
        dates written as the lender's panel writes them (`partner.catalog.form_values`)."""
        rows = []
        for group in self.loan_groups():
            shown = []
            for bound in group.fields:
                value = self.cleaned_data.get(bound.name)
                if value in (None, ""):
                    continue
                if isinstance(bound.field, forms.ChoiceField):
                    value = dict(bound.field.choices).get(
                        str(value).lower() if value in (True, False) else value, value
                    )
                elif isinstance(value, Decimal) and "staff-money" in bound.field.widget.attrs.get("class", ""):
                    value = money_text(value)
                elif isinstance(value, datetime.date):
                    value = date_text(value)
                shown.append((bound.label, str(value)))
            if shown:
                rows.append((group.legend, shown))
        result = self.cleaned_data.get("result")
        if result:
            details = result["details"]
            shown = [("Disclosure status", DISCLOSURE_STATUS_LABELS.get(details["status"], details["status"]))]
            if details.get("comments"):
                shown.append(("Comments", details["comments"]))
            rows.append(("Disclosure result", shown))
        return rows

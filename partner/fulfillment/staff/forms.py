"""The forms of the staff's order page: what staff type in, shaped and checked before a service is called.

The forms check the shape of the input (a file's kind and size, JSON that is an object, the loan
fields the product's response data entitlement allows); the rules stay in the services
(`partner.fulfillment.staff.services`), which decide again on every action.

A form that makes something (documents, a status update, a delivery, a decline) carries a one-time
key (`once`), drawn with the page: the same form sent twice (a double click, a resent POST) acts
once; a refused action frees its key, so the corrected form can be sent again.
"""

import uuid

from django import forms
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat

from partner.catalog.selectors import product_get
from partner.fulfillment.models import Order
from partner.fulfillment.staff import services as staff
from partner.platform import formats

# The loan.property fields of the spec, sent as text.
PROPERTY_FIELDS = ("streetAddress", "city", "state", "postalCode", "county", "loanPurposeType", "propertyUsageType")
DOCUMENT_ACCEPT = ",".join(["application/pdf", "image/png", "image/jpeg", ".pdf", ".png", ".jpg", ".jpeg"])
ONCE_SECONDS = 24 * 3600


class SentOnceForm(forms.Form):
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
        help_text="Sent as partnerStatus, for example “Inspection scheduled for Tuesday 10:00”.",
    )


class DeclineForm(SentOnceForm):
    prefix = "decline"
    reason = forms.CharField(
        label="Reason",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80, "maxlength": staff.DECLINE_REASON_MAX}),
        help_text="The lender reads it; the order ends once the decline is sent.",
    )


class JsonObjectField(forms.JSONField):
    """A JSON object typed into a textarea; empty: nothing."""

    default_error_messages = {"invalid": "This is not valid JSON.", "not_object": "This must be a JSON object: {…}."}

    def __init__(self, **kwargs):
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "cols": 80, "spellcheck": "false"}))
        super().__init__(required=False, **kwargs)

    def prepare_value(self, value):
        return "" if value is None else super().prepare_value(value)  # an empty box, not "null"

    def validate(self, value):
        super().validate(value)
        if value is not None and not isinstance(value, dict):
            raise ValidationError(self.error_messages["not_object"], code="not_object")


class DeliveryForm(SentOnceForm):
    """A partial or final delivery: what the lender reads, the loan fields the product's response data
    entitlement allows (one group each), and the disclosure result when the product holds the action."""

    prefix = "deliver"
    kind = forms.ChoiceField(
        label="Delivery",
        choices=[
            ("partial", "Partial: status processing, the order stays open"),
            ("final", "Final: status completed, the order is done once the service confirms it"),
        ],
        widget=forms.RadioSelect,
    )
    partner_status = forms.CharField(
        label="Status for the lender",
        required=False,
        widget=forms.TextInput(attrs={"size": 80, "maxlength": staff.PARTNER_STATUS_MAX}),
    )

    def __init__(self, *args, loan_fields: list[str] | None, request_loan: dict, result_offered: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.loan_fields = loan_fields
        self.result_offered = result_offered
        if loan_fields is None:
            self.fields["loan"] = JsonObjectField(
                label="loan", help_text="The product names no response fields: the whole loan object, as JSON."
            )
        for name in loan_fields or []:
            if name == "property":
                sent = request_loan.get("property") if isinstance(request_loan.get("property"), dict) else {}
                for key in PROPERTY_FIELDS:
                    initial = "" if sent.get(key) is None else str(sent[key])
                    self.fields[f"property_{key}"] = forms.CharField(label=key, required=False, initial=initial)
            else:
                self.fields[f"loan_{name}"] = JsonObjectField(label=f"loan.{name}", help_text="A JSON object.")
        if result_offered:
            self.fields["result_status"] = forms.ChoiceField(
                label="status",
                required=False,
                choices=[("", "No result"), *((status, status) for status in formats.DISCLOSURE_STATUSES)],
            )
            self.fields["result_comments"] = forms.CharField(
                label="comments", required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 80})
            )

    @classmethod
    def for_order(cls, order: Order, data=None) -> "DeliveryForm":
        product = product_get(name=order.product_name)
        request_loan = order.request.get("loan") if isinstance(order.request, dict) else None
        offered = formats.action_entitled(
            product.raw if product is not None else {},
            action=formats.DISCLOSURE_ACTION,
            request_type=order.request_type or "NEW_REQUEST",
            fmt=formats.DISCLOSURE_FORMAT,
        )
        return cls(
            data,
            loan_fields=staff.loan_fields_allowed(order),
            request_loan=request_loan if isinstance(request_loan, dict) else {},
            result_offered=offered,
        )

    def loan_groups(self) -> list[tuple[str, list]]:
        """(legend, bound fields) of each loan field offered, for the page's fieldsets."""
        if self.loan_fields is None:
            return [("loan", [self["loan"]])]
        groups = []
        for name in self.loan_fields:
            if name == "property":
                groups.append(("loan.property", [self[f"property_{key}"] for key in PROPERTY_FIELDS]))
            else:
                groups.append((f"loan.{name}", [self[f"loan_{name}"]]))
        return groups

    def result_fields(self) -> list:
        return [self["result_status"], self["result_comments"]] if self.result_offered else []

    def clean(self):
        data = super().clean()
        self._refuse_fields_not_offered()
        data["loan_data"] = self._loan(data)
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
        if self.loan_fields is None:
            return data.get("loan") or {}
        loan = {}
        for name in self.loan_fields:
            if name == "property":
                values = {key: (data.get(f"property_{key}") or "").strip() for key in PROPERTY_FIELDS}
                if any(values.values()):
                    loan["property"] = {key: value for key, value in values.items() if value}
            elif data.get(f"loan_{name}"):
                loan[name] = data[f"loan_{name}"]
        return loan

    def _refuse_fields_not_offered(self) -> None:
        """A loan field posted that the form does not offer (the entitlement changed since the page was drawn)."""
        if self.loan_fields is None:
            return
        posted = [key.removeprefix(self.add_prefix("")) for key in self.data if key.startswith(self.add_prefix(""))]
        named = set()
        for name in posted:
            if name.startswith("loan_") and name not in self.fields:
                named.add(name.removeprefix("loan_"))
            elif name.startswith("property_") and "property" not in self.loan_fields:
                named.add("property")
        for name in sorted(named):
            self.add_error(None, f"The product may not send loan.{name}.")

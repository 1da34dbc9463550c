"""What every fulfiller is and returns: the base class, its result, its refusal, and who we are.

A fulfiller does the partner's work for one transaction, offline and without side effects: it
reads the transaction `request` and the service's Product JSON and returns the response payload
plus the files to attach. Sending them (slots, upload, PATCH) is the pipeline's job.

A fulfiller class owns everything that differs from one kind of work to another: the options
form the lender fills in (`options_form`), whether it does the work of a newly pulled product
(`is_default_for`), and the documents it builds.
"""

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from django import forms
from django.conf import settings

from partner.core.errors import ApplicationError


@dataclass(frozen=True)
class Attachment:
    """A file to attach to the response (uploaded through a response resource slot)."""

    name: str
    mime_type: str
    content: bytes


# The columns of the findings, as the lender's panel and the reports head them: one wording for both.
FINDINGS_COLUMNS = {"label": "Field", "before": "As sent", "after": "As found", "changed": "Changed"}
# Our order reference and the service's transaction id, as every text for people names them: the
# reference is what a person quotes; the transaction id is for the partner's support only.
REFERENCE_LABEL = "Reference"
TRANSACTION_ID_LABEL = "Transaction ID (for support)"


@dataclass
class Fulfillment:
    """A fulfiller's answer: the PATCH payload without `resources`, and the files to attach.

    `final` is False for an acknowledgement: the order then goes to staff, who deliver the rest.
    `findings` is what the work found, for the lender's panel: one `{"label", "before", "after",
    "changed"}` per field checked, in the lender's words.
    """

    response: dict
    attachments: list[Attachment] = field(default_factory=list)
    final: bool = True
    findings: list[dict] = field(default_factory=list)


class FulfillmentRefused(ApplicationError):
    """A permanent refusal (bad loan data, missing entitlement): nothing is sent to the service.

    `message` is the reason, written for a person; it never holds a credential value.
    `extra["tell_lender"]` (`tell_lender`) says whether the lender should read it in
    `partnerStatus`: true for problems in the lender's data, false for our own configuration (a
    missing entitlement), where nothing may be sent at all.
    """

    def __init__(self, reason: str, *, tell_lender: bool = True):
        super().__init__(reason, extra={"tell_lender": tell_lender})

    @property
    def tell_lender(self) -> bool:
        return self.extra["tell_lender"]


@dataclass(frozen=True)
class PointOfContact:
    name: str
    role: str
    phone: str
    email: str
    fax: str = ""


@dataclass(frozen=True)
class RespondingParty:
    """The partner company as named in `respondingParty` of every response."""

    name: str
    address: str
    city: str
    state: str
    postal_code: str
    point_of_contact: PointOfContact

    def as_dict(self, *, include_fax: bool = False) -> dict:
        """The spec's `respondingParty` object; fax only where the response shows one."""
        contact = self.point_of_contact
        point_of_contact = {"name": contact.name, "role": contact.role, "phone": contact.phone, "email": contact.email}
        if include_fax and contact.fax:
            point_of_contact["fax"] = contact.fax
        return {
            "name": self.name,
            "address": self.address,
            "city": self.city,
            "state": self.state,
            "postalCode": self.postal_code,
            "pointOfContact": point_of_contact,
        }


def partner_party() -> RespondingParty:
    """Our company as the service shows it to lenders (`respondingParty`) and as reports name it.

    Read from the PARTNER_* settings on every call, so a response and its report always agree and
    a test can change them. Public contact details only: nothing here is secret.
    """
    return RespondingParty(
        name=settings.PARTNER_NAME,
        address=settings.PARTNER_ADDRESS,
        city=settings.PARTNER_CITY,
        state=settings.PARTNER_STATE,
        postal_code=settings.PARTNER_POSTAL_CODE,
        point_of_contact=PointOfContact(
            name=settings.PARTNER_CONTACT_NAME,
            role=settings.PARTNER_CONTACT_ROLE,
            phone=settings.PARTNER_PHONE,
            fax=settings.PARTNER_FAX,
            email=settings.PARTNER_EMAIL,
        ),
    )


def reference_number(prefix: str, transaction_id: str) -> str:
    """Our order reference: the same transaction always gets the same number (retries included)."""
    digest = hashlib.sha256(transaction_id.encode("utf-8")).hexdigest()[:10].upper()
    return f"{prefix}-{digest}"


def comments_field(label: str) -> forms.CharField:
    """An optional free-text note of the lender's, up to 500 characters (`request.options.comments`)."""
    return forms.CharField(
        label=label, required=False, max_length=500, widget=forms.Textarea, help_text="Up to 500 characters."
    )


class NoOptionsForm(forms.Form):
    """The options form of a fulfiller that asks the lender nothing."""


class Fulfiller(ABC):
    """One kind of partner work.

    Subclasses set `key` (the registry key, stored on each product), `label` (shown to staff),
    and `options_form` when the lender chooses anything in the order form; the form's cleaned
    data becomes `request.options` of the transaction.
    """

    key: str = ""
    label: str = ""
    options_form: type[forms.Form] = NoOptionsForm

    @classmethod
    def is_default_for(cls, product: dict) -> bool:
        """Does this fulfiller do the work of a newly pulled product (the service's Product JSON)?

        The registry asks each fulfiller in turn; when none claims the product, the first
        registered (the partner's main product) does its work. Staff can change it in the admin.
        """
        return False

    @abstractmethod
    def fulfill(self, *, transaction_id: str, request: dict, product: dict) -> Fulfillment:
        """Do the work for one transaction, or raise FulfillmentRefused."""

"""Staff-worked orders for the UI's tests, made the way the pipeline and the staff make them.

The lender's page talks to the sandbox on the live server (the `demo` fixture) for the origin; the
order's own calls to the service (the transaction read, the acknowledgement and each delivery's
PATCH, slots and uploads) go to the recording fake of `tests/helpers/fakes.py`, as in
`tests/fulfillment/test_staff_work.py`. Install the fake after `demo` (which pulls the products
from the sandbox).
"""

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from partner.fulfillment.orders.services import order_open
from partner.fulfillment.staff import services as staff
from partner.sandbox.origins import origin_create
from tests.helpers.orders import deliveries_sent, order_ran
from tests.helpers.products import LENDER_CREDENTIALS

PDF = b"%PDF-1.7\n% an appraisal report\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
LOAN = {"loanNumber": "DEMO-1001", "property": {"streetAddress": "500 Howard Street", "postalCode": "94105"}}


def staff_product_name(seed) -> str:
    """The demo's staff-worked product (the appraisal), worked by staff in our catalog with a 48 h
    turnaround; the address verification made staff-worked where the sandbox has no appraisal."""
    from partner.catalog.models import Product

    name = "appraisal" if "appraisal" in seed.products else "address-verification"
    Product.objects.filter(name=name).update(fulfiller="staff_worked", turnaround_hours=48)
    return name


def launched(seed, product_name: str, username: str = "lender.demo") -> tuple[str, str]:
    """An origin of `username` for the product: its id and partner access token."""
    origin = origin_create(user=seed.users[username], loan=seed.loans[0], product=seed.products[product_name])
    return origin.origin_id, origin.partner_access_token


def origin_headers(origin_id: str, token: str) -> dict:
    return {"HTTP_X_ORIGIN_ID": origin_id, "HTTP_X_PARTNER_ACCESS_TOKEN": token}


def staff_order(fake, *, transaction_id: str, product_name: str):
    """A staff-worked order of lender.demo, acknowledged by the pipeline ("Order received")."""
    fake.transaction_add(
        transaction_id,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name=product_name,
    )
    order, _, _ = order_open(transaction_id=transaction_id, product_name=product_name)
    order_ran(order_id=order.pk)
    order.refresh_from_db()
    return order


def staff_member(username: str = "appraiser.ann"):
    user = get_user_model().objects.filter(username=username).first()
    return user or get_user_model().objects.create_user(
        username, f"{username}@partner.example", "pw-12345-x", is_staff=True
    )


def upload(name: str = "report.pdf", content: bytes = PDF) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


class Worker:
    """A staff member working one order: each action as the admin's pages call it; `send()` is the
    worker sending what is waiting."""

    def __init__(self, order, user=None):
        self.order = order
        self.user = user or staff_member()
        staff.order_take(order_id=order.pk, user=self.user)

    def update(self, text: str):
        return staff.status_update_post(order_id=self.order.pk, text=text, user=self.user)

    def attach(self, name: str = "report.pdf", content: bytes = PDF):
        return staff.document_attach(order_id=self.order.pk, upload=upload(name, content), user=self.user)

    def deliver(self, text: str = "", *, final: bool = False, loan: dict | None = None):
        return staff.delivery_request(
            order_id=self.order.pk, final=final, partner_status=text, loan=loan, user=self.user
        )

    def decline(self, reason: str):
        return staff.order_decline(order_id=self.order.pk, reason=reason, user=self.user)

    def send(self) -> int | None:
        return deliveries_sent(order_id=self.order.pk)

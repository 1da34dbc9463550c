"""Which orders the lender in the panel may see: their own or their company's, of this product and
loan; an order's delivered document; the loan's earlier orders of the product (the duplicate guard)."""

import re

from django.db.models import Q

from partner.fulfillment.models import Order, OrderDocument
from partner.fulfillment.orders.selectors import UI_STEPS
from partner.fulfillment.sending.delivered import document_delivered_get
from partner.ui.errors import DocumentNotShown, TransactionNotShown

_DOCUMENT_ID = re.compile(r"[0-9]{1,18}")
# The loan's earlier orders the form lists before a new one: the latest few.
EARLIER_ORDERS_SHOWN = 5


def lender_may_see(*, order, account_id: int | None, company_id: int | None) -> bool:
    """The order's own user, or a user of the same lender company; anyone with the product's origin
    when the order was placed without partner credentials (a product that defines none)."""
    if order.ordered_by_id is None:
        return True
    if account_id is not None and order.ordered_by_id == account_id:
        return True
    return company_id is not None and order.ordered_by.company_id == company_id


def _visible_to(account_id: int | None, company_id: int | None) -> Q:
    """`lender_may_see` as a filter."""
    visible = Q(ordered_by__isnull=True)
    if account_id is not None:
        visible |= Q(ordered_by_id=account_id)
    if company_id is not None:
        visible |= Q(ordered_by__company_id=company_id)
    return visible


def order_for_lender(
    *,
    transaction_id: str,
    product_name: str,
    account_id: int | None,
    company_id: int | None,
    loan_number: str = "",
) -> Order | None:
    """The order with who placed it, in one query (None before its webhook landed);
    TransactionNotShown when it is not theirs: another product's, lender's, or loan's."""
    # Not the lender's loan as sent (`request`) nor staff's error text: never shown, and read on every poll.
    orders = Order.objects.select_related("ordered_by").defer("request", "last_error")
    order = orders.filter(transaction_id=transaction_id).first()
    if order is None:
        return None
    if order.product_name and order.product_name != product_name:
        raise TransactionNotShown
    if loan_number and order.loan_number and order.loan_number != loan_number:
        raise TransactionNotShown
    if not lender_may_see(order=order, account_id=account_id, company_id=company_id):
        raise TransactionNotShown
    return order


def transaction_document_get(
    *,
    transaction_id: str,
    document_id: str,
    product_name: str,
    account_id: int | None = None,
    company_id: int | None = None,
    loan_number: str = "",
) -> OrderDocument:
    """A delivered document of the lender's order, with its file; DocumentNotShown otherwise, whichever
    the reason (the order not theirs included), so that every refusal answers the same."""
    try:
        order = order_for_lender(
            transaction_id=transaction_id,
            product_name=product_name,
            account_id=account_id,
            company_id=company_id,
            loan_number=loan_number,
        )
    except TransactionNotShown:
        raise DocumentNotShown from None
    if order is None or not _DOCUMENT_ID.fullmatch(document_id or ""):
        raise DocumentNotShown
    document = document_delivered_get(order=order, document_id=int(document_id))
    if document is None or not document.file:
        raise DocumentNotShown
    return document


def earlier_orders_list(
    *, product_name: str, loan_number: str, account_id: int | None, company_id: int | None
) -> list[dict]:
    """This loan's latest orders of the product the lender may see, newest first: what the order
    form lists before a new order, so that nobody orders the same again by accident. One query."""
    if not loan_number:
        return []  # a loan without a number cannot be matched to its orders
    orders = (
        Order.objects.filter(_visible_to(account_id, company_id), product_name=product_name, loan_number=loan_number)
        .select_related("ordered_by")
        .only("transaction_id", "reference_number", "status", "created_at", "ordered_by", "ordered_by__username")
        .order_by("-created_at")[:EARLIER_ORDERS_SHOWN]
    )
    return [
        {
            "transactionId": order.transaction_id,
            "referenceNumber": order.reference_number,
            "step": UI_STEPS[order.status],
            "orderedAt": order.created_at.isoformat(),
            "orderedBy": order.ordered_by.username if order.ordered_by_id else "",
        }
        for order in orders
    ]

"""Reads behind the embedded UI: a transaction's progress, for the lender who may see it."""

from partner.fulfillment.selectors import tracker_get, tracker_view


class TransactionNotShown(Exception):
    """The transaction is another product's or another lender's: not for this lender's page."""


def lender_may_see(*, tracker, account_id: int | None, company_id: int | None) -> bool:
    """The order's own user, or a user of the same lender company; anyone with the product's origin
    when the order was placed without partner credentials (a product that defines none)."""
    if tracker.ordered_by_id is None:
        return True
    if account_id is not None and tracker.ordered_by_id == account_id:
        return True  # the same user: no need to load the account
    return company_id is not None and tracker.ordered_by.company_id == company_id


def transaction_progress_get(
    *, transaction_id: str, product_name: str, account_id: int | None = None, company_id: int | None = None
) -> dict:
    """The tracker's view of a transaction, or the 'requested' view before the webhook has landed."""
    tracker = tracker_get(transaction_id=transaction_id)
    if tracker is not None and tracker.product_name and tracker.product_name != product_name:
        raise TransactionNotShown(transaction_id)
    if tracker is not None and not lender_may_see(tracker=tracker, account_id=account_id, company_id=company_id):
        raise TransactionNotShown(transaction_id)
    view = tracker_view(transaction_id)
    if view is None:
        # The host created it but our webhook has not arrived yet: it is requested.
        return {
            "transaction_id": transaction_id,
            "status": None,
            "step": "requested",
            "reason": "",
            "reference_number": "",
            "partner_status": "",
            "attachments": [],
            "updated_at": None,
            "finished": False,
        }
    view = dict(view)
    view["finished"] = view.get("step") in ("completed", "failed")
    view["attachments"] = [
        {"name": item.get("name"), "mime_type": item.get("mime_type"), "resource_id": item.get("resource_id")}
        for item in view.get("attachments") or []
    ]
    return view

"""The staff's queue on the admin's index: how many open orders need someone ("2 waiting, 1 overdue")."""

from django import template
from django.urls import reverse

from partner.fulfillment.models import StaffOrder
from partner.fulfillment.staff.selectors import queue_counts

register = template.Library()


@register.inclusion_tag("admin/fulfillment/stafforder/queue_counts.html", takes_context=True)
def staff_queue_counts(context):
    """The counts and their links, for staff who may view the orders to work (nothing for others)."""
    user = context["request"].user
    if not (user.has_perm("fulfillment.view_order") or user.has_perm("fulfillment.view_stafforder")):
        return {"shown": False}
    counts = queue_counts(StaffOrder.objects.filter(staff_worked=True))
    queue = reverse("admin:fulfillment_stafforder_changelist")
    return {
        "shown": True,
        "counts": counts,
        "queue": queue,
        "waiting_url": f"{queue}?assigned=nobody",
        "overdue_url": f"{queue}?overdue=yes",
    }

"""Every response we send is a stored delivery: an automated order's result and a staff-worked order's
acknowledgement become `Delivery` rows like the staff's, sent by the one sender.

Orders prepared before this migration get the delivery their pipeline would now have made: the
result of an automated order (its documents attached to it; sent, confirmed or failed as the order
says), and the acknowledgement of a staff-worked order
not yet acknowledged. An order in the middle of its work resumes from there. The order's and the
deliveries' `slots_requested_at` go: a document without a slot is what needs one.
"""

from django.db import migrations, models

RESULT, ACKNOWLEDGEMENT = "result", "acknowledgement"
PENDING, SENT, CONFIRMED, FAILED = "pending", "sent", "confirmed", "failed"


def _state(order) -> str:
    if order.status == "REQUEST_COMPLETED":
        return CONFIRMED
    if order.delivered_at is not None or order.status == "RESPONSE_DELIVERED":
        return SENT
    if order.status == "FAILED":
        return FAILED
    return PENDING


def deliveries_of_prepared_orders(apps, schema_editor):
    Order = apps.get_model("fulfillment", "Order")
    Delivery = apps.get_model("fulfillment", "Delivery")
    OrderDocument = apps.get_model("fulfillment", "OrderDocument")
    automated = Order.objects.filter(prepared_at__isnull=False, staff_worked=False).exclude(deliveries__kind=RESULT)
    for order in automated.iterator():
        state = _state(order)
        delivery = Delivery.objects.create(
            order=order,
            kind=RESULT,
            state=state,
            partner_status=str((order.response or {}).get("partnerStatus", ""))[:500],
            sequence=1 if state in (SENT, CONFIRMED) else None,
            sent_at=order.delivered_at if state in (SENT, CONFIRMED) else None,
            confirmed_at=order.completed_at if state == CONFIRMED else None,
            failed_at=order.failed_at if state == FAILED else None,
            failure_reason=order.failure_reason if state == FAILED else "",
        )
        OrderDocument.objects.filter(order=order, delivery__isnull=True).update(delivery=delivery)
    unacknowledged = Order.objects.filter(
        prepared_at__isnull=False, staff_worked=True, status__in=["VALIDATION_REQUESTED", "IN_PROGRESS", "FAILED"]
    ).exclude(deliveries__kind=ACKNOWLEDGEMENT)
    for order in unacknowledged.iterator():
        failed = order.status == "FAILED"
        Delivery.objects.create(
            order=order,
            kind=ACKNOWLEDGEMENT,
            state=FAILED if failed else PENDING,
            partner_status=str((order.response or {}).get("partnerStatus", ""))[:500],
            failed_at=order.failed_at if failed else None,
            failure_reason=order.failure_reason if failed else "",
        )


class Migration(migrations.Migration):
    dependencies = [
        ("fulfillment", "0011_order"),
    ]

    operations = [
        migrations.AlterField(
            model_name="delivery",
            name="kind",
            field=models.CharField(
                choices=[
                    ("result", "Result"),
                    ("acknowledgement", "Acknowledgement"),
                    ("status_update", "Status update"),
                    ("partial", "Partial delivery"),
                    ("final", "Final delivery"),
                    ("decline", "Decline"),
                    ("failure_notice", "Failure notice"),
                ],
                max_length=20,
            ),
        ),
        migrations.RunPython(deliveries_of_prepared_orders, migrations.RunPython.noop),
        migrations.RemoveField(model_name="order", name="slots_requested_at"),
        migrations.RemoveField(model_name="delivery", name="slots_requested_at"),
    ]

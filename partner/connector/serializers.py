"""What the API reads and answers: the serializers that validate each request and shape each answer
(the OpenAPI document is made from them, drf-spectacular)."""

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from partner.connector.events import order_data, order_request
from partner.connector.selectors import product_forms
from partner.fulfillment.models import OrderStatus
from partner.fulfillment.staff.services import DECLINE_REASON_MAX, PARTNER_STATUS_MAX


class StrictInteger(serializers.IntegerField):
    """An integer written as digits: `1.0` or ` 1` is refused, as the document's `integer` says."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not re.fullmatch(r"-?[0-9]+", data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictQuery(serializers.Serializer):
    """Query parameters as strict as the document: one given empty (`updated_since=`) is refused,
    never taken as left out."""

    def to_internal_value(self, data):
        blank = {
            name: ["This parameter is empty: give a value or leave it out."]
            for name in self.fields
            if hasattr(data, "getlist") and "" in data.getlist(name)
        }
        if blank:
            raise serializers.ValidationError(blank)
        return super().to_internal_value(data)


class DeliveryOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="status_update, partial, final, decline, acknowledgement, …")
    state = serializers.CharField(help_text="pending, sent, confirmed (the service processed it) or failed")
    partner_status = serializers.CharField(help_text="What the lender reads.")
    failure_reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class DocumentOut(serializers.Serializer):
    id = serializers.IntegerField(help_text="Name it in a delivery's `documents`.")
    name = serializers.CharField()
    mime_type = serializers.CharField()
    size = serializers.IntegerField()
    delivery = serializers.IntegerField(source="delivery_id", allow_null=True, help_text="Empty: waiting.")


class OrderSummaryOut(serializers.Serializer):
    id = serializers.IntegerField()
    reference = serializers.CharField(source="reference_number")
    product = serializers.CharField(source="product_name")
    status = serializers.ChoiceField(choices=OrderStatus.choices)
    due_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class OrderOut(OrderSummaryOut):
    worked_by = serializers.SerializerMethodField(help_text="Who works the order: the system's user, or a person.")
    request = serializers.SerializerMethodField(
        help_text="As the lender sent it: loan data as entitled, options, notes, who ordered it; no credentials."
    )
    deliveries = DeliveryOut(many=True)
    documents = DocumentOut(many=True, source="attachments")

    def get_worked_by(self, order) -> str | None:
        return order_data(order, version=0)["worked_by"]

    def get_request(self, order) -> dict:
        return order_request(order)


class AcknowledgeIn(serializers.Serializer):
    """Nothing to send: the system says it has the order."""


class StatusUpdateIn(serializers.Serializer):
    text = serializers.CharField(max_length=PARTNER_STATUS_MAX, help_text="What the lender reads (partnerStatus).")


class DeliverIn(serializers.Serializer):
    final = serializers.BooleanField(help_text="true: the final delivery (the order completes once confirmed).")
    message = serializers.CharField(max_length=PARTNER_STATUS_MAX, required=False, allow_blank=True, default="")
    loan = serializers.DictField(
        required=False, default=dict, help_text="Loan fields the product's response data entitlement allows."
    )
    documents = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Ids of uploaded documents to deliver; left out: every uploaded one not delivered yet.",
    )


class DeclineIn(serializers.Serializer):
    reason = serializers.CharField(max_length=DECLINE_REASON_MAX, help_text="What the lender reads.")


class DocumentIn(serializers.Serializer):
    file = serializers.FileField(help_text="A PDF, PNG or JPEG, checked on its content.")


class EventOut(serializers.Serializer):
    id = serializers.IntegerField(
        source="position", help_text="Its place in the feed, the cursor: ask for the events after it."
    )
    webhook_id = serializers.CharField(source="message_id", help_text="The webhook-id of its pushes.")
    type = serializers.CharField()
    created_at = serializers.DateTimeField()
    payload = serializers.JSONField(help_text='{"type", "timestamp", "data"}: the body its pushes carry.')


class EventPageOut(serializers.Serializer):
    events = EventOut(many=True)
    next_after = serializers.IntegerField(help_text="The cursor of the next page (the same when nothing is new).")


class ProductFormOut(serializers.Serializer):
    request_type = serializers.CharField(help_text="The request type these forms are for (NEW_REQUEST, …).")
    request_fields = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="The loan paths an order's request carries (order.created's request.loan), such as "
        "loan.property; null: the loan as the platform sends it.",
    )
    delivery_loan = serializers.DictField(
        help_text="The JSON Schema (draft 2020-12) the `loan` of a delivery must follow: one property per loan "
        "field the product may send; a value it refuses gets 422 naming the allowed values."
    )


class ProductOut(serializers.Serializer):
    name = serializers.CharField(help_text="The product's name: orders carry it as `product`.")
    title = serializers.CharField(source="listing_name", help_text="The name lenders read.")
    request_types = serializers.ListField(child=serializers.CharField())
    turnaround_hours = serializers.IntegerField(allow_null=True, help_text="An order is due this long after it came.")
    forms = serializers.SerializerMethodField(
        help_text="Per request type: the request's loan fields and the delivery's loan form."
    )

    @extend_schema_field(ProductFormOut(many=True))
    def get_forms(self, product) -> list[dict]:
        return product_forms(product)

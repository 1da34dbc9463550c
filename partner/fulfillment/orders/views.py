"""GET /v1/status/{transaction_id}: the order of a transaction (the reference back-end's endpoint)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from partner.fulfillment.orders.selectors import order_get


class OrderStatusApi(APIView):
    authentication_classes = []
    permission_classes = []

    class OutputSerializer(serializers.Serializer):
        status = serializers.CharField()
        resource_id = serializers.CharField(allow_blank=True)

    @extend_schema(
        operation_id="transaction_status",
        responses={200: OutputSerializer, 404: OpenApiResponse(description="Unknown transaction id")},
    )
    def get(self, request, transaction_id):
        order = order_get(transaction_id=transaction_id)
        if order is None:
            raise NotFound("Unknown transaction id")
        return Response(self.OutputSerializer(order).data)

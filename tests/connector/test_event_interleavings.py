"""A connected order's events come in the order its moments happened, whoever witnesses them first.

The service may process our acknowledgement and call back before the sender has recorded the PATCH
(a slow answer, a fast callback). A deterministic interleaving holds the sender between the accepted
PATCH and its record (`sender.patched`) while the "processed" callback comes: the system must still
hear of the order first (`order.created`) and of the acknowledgement's confirmation after it, each
once. Before the fix, the confirmation was announced while the order had no route yet, and its
event was never made (a seed of the fault schedule found it: 2 confirmation events for 3).
"""

import pytest

from partner.connector.models import Event
from partner.fulfillment.models import DeliveryState, Order
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.runs import order_run
from partner.fulfillment.sending.callbacks import delivery_confirm
from tests.helpers.connector import LOAN, TXN
from tests.helpers.interleaving import Actor, Pause
from tests.helpers.products import LENDER_CREDENTIALS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "no-version"])
def test_the_acknowledgements_callback_before_the_senders_record_still_comes_after_order_created(
    fake_platform, tasks_sent, connection, connected_product, versioned
):
    fake_platform.transaction_add(
        TXN,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name=connected_product.name,
    )
    order, _, _ = order_open(transaction_id=TXN, product_name=connected_product.name)

    with Pause("sender.patched") as patched:
        run = Actor(lambda: order_run(order_id=order.pk), name="run")
        patched.reached()  # the acknowledgement accepted by the service, not yet recorded
        [ack] = Order.objects.get(pk=order.pk).deliveries.all()
        assert ack.state == DeliveryState.PENDING and ack.sequence == 1
        delivery_confirm(transaction_id=TXN, event_id="ev-1", version=1 if versioned else None)
        patched.resume()
        assert run.outcome().sent == 1

    made = list(Event.objects.filter(order=order).order_by("pk").values_list("type", "payload"))
    assert [kind for kind, _ in made] == ["order.created", "order.delivery.confirmed"]
    assert [payload["data"]["order"]["version"] for _, payload in made] == [1, 2]
    assert made[1][1]["data"]["delivery"] == {**made[1][1]["data"]["delivery"], "id": ack.pk, "state": "confirmed"}
    order.refresh_from_db()
    assert order.assigned_to == connection.user  # routed and assigned once, by the acknowledgement
    assert list(order.steps.filter(name="acknowledged").values_list("name", flat=True)) == ["acknowledged"]

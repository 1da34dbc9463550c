"""Connected products: acknowledged at once, then worked by the partner's own order system.

The order is checked as for any product (credentials, entitlements) and acknowledged as a
staff-worked one is; from then on the partner's system is told of it by signed events and answers
it through the connector's API (`partner.connector`), which stores each answer as the same
`Delivery` a staff member's action would (`partner.fulfillment.staff.services`). Staff may take a
connected order over by hand and work it as a staff-worked order.
"""

from partner.catalog.fulfiller_keys import CONNECTED
from partner.fulfillment.automated.fulfillers.staff_worked import StaffWorkedFulfiller


class ConnectedFulfiller(StaffWorkedFulfiller):
    key = CONNECTED
    label = "Connected: the partner's own order system answers it (acknowledged at once)"

    @classmethod
    def is_default_for(cls, product: dict) -> bool:
        return False  # chosen by staff for a product they connect, never by a product's tags

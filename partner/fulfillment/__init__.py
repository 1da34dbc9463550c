"""Our orders: one per transaction of the service, from its webhook to the service's confirmation.

A map of the package:

- `models.py`: the order (`Order`), its documents, its history (`OrderStep`), the responses we owe
  the service (`Delivery`), and where the reconciliation left the service's transaction list.
- `orders/`: the order and its state: opened, failed, retried, completed; the reads of it (the
  status endpoint, the sweep's stalled orders) and its metrics.
- `automated/`: the automated work: the pipeline that runs an order's steps and the fulfillers
  that do the work of each product.
- `staff/`: the staff's work on the orders that need people: the rules of each action, the work
  queue and the order page in the admin, the e-mails to staff.
- `sending/`: what goes to the service: documents uploaded to their slots, the staff's deliveries
  sent, the service's callbacks applied, and what of an order reached the lender.
- `recovery/`: nothing accepted is lost: stalled orders handed back, the service's transaction
  list reconciled, finished orders' data purged on time.
- `tasks.py` (every Celery task of the package, thin) and `enqueue.py` (their names, and one
  function per task that hands it to a worker after commit); `handlers.py` (what the inbox
  dispatches to us); `admin.py` (the orders' admin).
"""

"""What operators look at: the operations dashboard in the admin, the health probes and the metrics.

- `dashboard.py`: the admin's operations page (/admin/dashboard/): orders per day, turnarounds,
  failures, orders awaiting the service's confirmation, the inbox backlog. It sees both the orders
  (`partner.fulfillment.orders.figures`) and the inbox, so it sits above both.
- `views.py`: /healthz, /healthz/live, /healthz/ready and /metrics. What they report is collected
  from every app through the registries of `partner.core.health` and `partner.core.metrics`.
"""

"""Observability of calls to the service: Django signals that tests and benchmarks count.

`service_call_finished` is sent once per HTTP exchange with the service's API
and upload locations (each retry is its own exchange, `attempt` counts them);
`token_requested` once per HTTP exchange with the token endpoint. Keyword
arguments of both: method, url (with start/limit for pages, without query for
upload locations), status (None when no answer came), duration (seconds),
attempt (1-based), error (the transport exception's class name, or None).
"""

from django.dispatch import Signal

service_call_finished = Signal()
token_requested = Signal()

"""What the tests share besides fixtures, one module per kind of thing (the fixtures stay in the
conftest.py files, which may import from here; no test module imports another).

- `browser`: Chromium via Playwright (its fixtures, registered in tests/conftest.py) and the
  sandbox's host page driven like a person would.
- `fakes`: `FakePlatform`, the service's client replaced by a recording fake.
- `front_door`: a request to `config.wsgi` as gunicorn makes it (the webhook's one front door).
- `orders`: one run of an order as its task makes it, orders as the sender leaves them, waiting
  for an order to reach a status.
- `ports`: whether a service answers on a port, and a free one.
- `processes`: Django started in another process (settings cases, a second token requester).
- `product_page`: the product admin's change page read as a browser sees it.
- `products`: products in our catalog and the demo lender's credentials.
- `sandbox`: orders placed through the sandbox, its host's origins, its token.
- `servers`: small scripted HTTP servers (a fake service, a webhook receiver).
- `service_calls`: the recorded exchanges with the service and what kind each was.
- `staff_orders`: staff-worked orders and a staff member working one.
- `stamp_fulfiller`: a fulfiller that lives only in the tests.
- `urn_words`: the URN words a test runs with (the spec's, or other ones), and a test run with both.
- `waiting`: poll until something is so (a wait, never a timing verdict).
- `webhooks`: a notification as the service sends it.
- `workers`: real Celery workers started and killed, the app pointed at another broker.
"""

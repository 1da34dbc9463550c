"""A year of history in the bench database, written with set-based SQL (INSERT ... SELECT generate_series).

`history_seed(database, notifications=1_000_000, orders=100_000)` writes, spread evenly over the
last 364 days (newest ten minutes ago), what a year of steady work leaves behind:

- `orders` orders of the demo product: 1 % failed, 0.1 % declined (staff-worked), 2 % more worked by
  staff (three confirmed deliveries each), the rest completed; the newest 60 still open, 15 in each
  of: in progress with a retry due in an hour, validation requested and held by a live worker (lease
  an hour ahead), delivered and waiting for the callback (most of them longer than
  CONFIRMATION_WAIT_SECONDS, so the reconciliation watches them), with staff (due tomorrow; a few past
  due, staff already told);
- four steps per order and one report (attachment) per automated delivered order;
- `notifications` notifications, ten per order in time order: the order's `created` webhook and nine
  events of it; 1 % ignored, 0.1 % failed, 0.01 % refused, the rest processed; the newest 40 not
  finished: 20 processing (held by a live worker) and 20 queued and fresh (`updated_at` a day ahead,
  so that no sweep of the run counts them as stalled: a live system's queued rows are taken within a
  second);
- retention in its steady state: what its daily purge would have erased is erased (notification
  bodies, headers and addresses older than 29 days; orders' data, step details and documents older
  than 89 days), nothing is old enough to delete (364 days < 365), so that a purge run by the bench
  finds what a daily run finds: nothing, or next to nothing.

Then VACUUM ANALYZE (the planner's statistics, the visibility map), as autovacuum would have done.
Returns the row counts and the seconds it took.
"""

import time

from bench import stack

SPAN = "364 days"
OPEN_ORDERS = 60  # the newest orders, still open (the orders' query below)
PRODUCT = "address-verification"
TRANSACTION_TYPE = "urn:svc:platform:transaction"  # partner.platform.urns with the default SVC_URN_PREFIX
EVENT_TYPE = "urn:svc:platform:transaction:event"
TABLES = (
    "fulfillment_order",
    "fulfillment_orderstep",
    "fulfillment_orderdocument",
    "fulfillment_delivery",
    "inbox_notification",
)

_ORDERS = """
WITH base AS (
    SELECT i, 'seed-txn-' || lpad(i::text, 7, '0') AS txn,
           %(t0)s::timestamptz - (%(span)s::interval * (%(m)s - i) / %(m)s) AS c,
           CASE WHEN i > %(m)s - 60
                THEN (ARRAY['IN_PROGRESS', 'VALIDATION_REQUESTED', 'RESPONSE_DELIVERED', 'WITH_STAFF'])
                     [(%(m)s - i) / 15 + 1]
                WHEN i %% 100 = 7 THEN 'FAILED'
                WHEN i %% 1000 = 13 THEN 'DECLINED'
                ELSE 'REQUEST_COMPLETED' END AS status
    FROM generate_series(%(first_order)s::int, %(m)s::int) AS i
), s AS (
    SELECT *, c < %(t0)s::timestamptz - interval '89 days' AS erased,
           (status IN ('WITH_STAFF', 'DECLINED') OR (status = 'REQUEST_COMPLETED' AND i %% 50 = 21)) AS staff,
           status IN ('REQUEST_COMPLETED', 'RESPONSE_DELIVERED') AS delivered
    FROM base
)
INSERT INTO fulfillment_order (
    created_at, updated_at, transaction_id, resource_ref, product_name, request_type, status, resource_id,
    reference_number, response, prepared_at, slots_requested_at, delivered_at, completed_at, failed_at, event_id,
    attempts, last_error, failure_code, failure_reason, claimed_until, next_attempt_at, due_at, loan_number,
    overdue_notified_at, request, staff_worked, findings)
SELECT c,
       CASE status WHEN 'REQUEST_COMPLETED' THEN c + CASE WHEN staff THEN interval '1 day' ELSE interval '8 s' END
                   WHEN 'FAILED' THEN c + interval '3 s' WHEN 'DECLINED' THEN c + interval '1 day'
                   ELSE c + interval '4 s' END,
       txn, %(base)s || '/partner/v2/transactions/' || txn, %(product)s, 'NEW_REQUEST', status,
       CASE WHEN delivered AND NOT staff THEN 'seed-res-' || i ELSE '' END,
       'AV-' || lpad(i::text, 7, '0'),
       CASE WHEN erased OR status IN ('FAILED', 'IN_PROGRESS', 'VALIDATION_REQUESTED') THEN NULL
            ELSE jsonb_build_object('status', 'completed', 'partnerStatus', 'Address verified',
                 'loan', jsonb_build_object('property', jsonb_build_object('streetAddress', '500 Howard Street',
                 'city', 'San Francisco', 'state', 'CA', 'postalCode', '94105', 'county', 'San Francisco'))) END,
       CASE WHEN status = 'VALIDATION_REQUESTED' THEN NULL ELSE c + interval '1 s' END,
       CASE WHEN delivered AND NOT staff THEN c + interval '2 s' END,
       CASE WHEN delivered THEN c + interval '4 s' END,
       CASE WHEN status = 'REQUEST_COMPLETED'
            THEN c + CASE WHEN staff THEN interval '1 day' ELSE interval '8 s' END END,
       CASE WHEN status = 'FAILED' THEN c + interval '3 s' END,
       CASE WHEN status = 'REQUEST_COMPLETED' THEN 'seed-evt-' || (i * 10) ELSE '' END,
       1, '', CASE WHEN status = 'FAILED' THEN 'order_refused' ELSE '' END,
       CASE WHEN status = 'FAILED' AND NOT erased THEN 'The property address could not be found.' ELSE '' END,
       CASE WHEN status = 'VALIDATION_REQUESTED' THEN now() + interval '1 hour' END,
       CASE WHEN status = 'IN_PROGRESS' THEN now() + interval '1 hour' END,
       CASE WHEN status = 'WITH_STAFF' THEN now() + CASE WHEN i %% 5 = 0 THEN interval '-1 hour'
                                                          ELSE interval '1 day' END END,
       CASE WHEN erased THEN '' ELSE 'LN-' || (i %% 20000) END,
       CASE WHEN status = 'WITH_STAFF' AND i %% 5 = 0 THEN now() - interval '30 minutes' END,
       CASE WHEN erased THEN NULL
            ELSE jsonb_build_object('type', 'NEW_REQUEST', 'options', jsonb_build_object('rush', false),
                 'loan', jsonb_build_object('loanNumber', 'LN-' || (i %% 20000), 'loanAmount', 420000,
                 'borrower', jsonb_build_object('firstName', 'Alex', 'lastName', 'Doe'),
                 'property', jsonb_build_object('streetAddress', '500 Howard Street', 'city', 'San Francisco',
                 'state', 'CA', 'postalCode', '94105'))) END,
       staff,
       CASE WHEN delivered AND NOT staff THEN
            '[{"label": "Street", "before": "500 Howard St", "after": "500 Howard Street", "changed": "Yes"},
              {"label": "ZIP code", "before": "94105", "after": "94105", "changed": "No"}]'::jsonb
            ELSE '[]'::jsonb END
FROM s ORDER BY i
"""

_STEPS = """
INSERT INTO fulfillment_orderstep (name, detail, created_at, order_id, actor)
SELECT (ARRAY['prepared', 'slots requested', 'uploaded', 'delivered'])[k],
       CASE WHEN t.loan_number = '' THEN '' ELSE 'ZIP 94105 checked against the county' END,
       t.created_at + k * interval '1 s', t.id, ''
FROM fulfillment_order t CROSS JOIN generate_series(1, 4) AS k
WHERE t.transaction_id LIKE 'seed-txn-%%' ORDER BY t.id, k
"""

_ATTACHMENTS = """
INSERT INTO fulfillment_orderdocument (
    position, name, mime_type, resource_id, upload_location, upload_authorization, uploaded_at, order_id,
    upload_started_at, added_by, file, size)
SELECT 0, 'report.pdf', 'application/pdf', t.resource_id,
       CASE WHEN t.loan_number = '' THEN '' ELSE %(base)s || '/uploads/' || t.resource_id END, '',
       t.delivered_at - interval '1 s', t.id, t.delivered_at - interval '2 s', '',
       CASE WHEN t.loan_number = '' THEN '' ELSE 'documents/' || t.transaction_id || '/0-report.pdf' END, 20480
FROM fulfillment_order t
WHERE t.transaction_id LIKE 'seed-txn-%%' AND t.resource_id <> '' ORDER BY t.id
"""

_DELIVERIES = """
INSERT INTO fulfillment_delivery (
    created_at, updated_at, kind, state, partner_status, loan, result, created_by, sequence, sent_at, confirmed_at,
    failure_reason, attempts, last_error, order_id)
SELECT t.created_at + k * interval '1 hour', t.created_at + k * interval '1 hour',
       (ARRAY['acknowledgement', 'status_update', CASE t.status WHEN 'DECLINED' THEN 'decline' ELSE 'final' END])[k],
       CASE WHEN t.status = 'WITH_STAFF' THEN 'sent' ELSE 'confirmed' END,
       (ARRAY['Order received', 'Inspection booked', 'Report delivered'])[k], '{}'::jsonb, NULL,
       CASE WHEN k = 1 THEN '' ELSE 'staff.member' END, k, t.created_at + k * interval '1 hour',
       CASE WHEN t.status = 'WITH_STAFF' THEN NULL ELSE t.created_at + k * interval '1 hour' + interval '5 s' END,
       '', 1, '', t.id
FROM fulfillment_order t CROSS JOIN generate_series(1, 3) AS k
WHERE t.transaction_id LIKE 'seed-txn-%%' AND t.staff_worked AND (t.status <> 'WITH_STAFF' OR k = 1)
ORDER BY t.id, k
"""

_NOTIFICATIONS = """
WITH base AS (
    SELECT j, 'seed-txn-' || lpad((((j - 1)::bigint * %(m)s / %(n)s) + 1)::text, 7, '0') AS txn,
           %(t0)s::timestamptz - (%(span)s::interval * (%(m)s - (((j - 1)::bigint * %(m)s / %(n)s) + 1)) / %(m)s)
               + (j %% 10) * interval '2 s' AS r,
           CASE WHEN j > %(n)s - 20 THEN 'processing' WHEN j > %(n)s - 40 THEN 'queued'
                WHEN j %% 10000 = 9999 THEN 'refused' WHEN j %% 1000 = 500 THEN 'failed'
                WHEN j %% 100 = 50 THEN 'ignored' ELSE 'processed' END AS state
    FROM generate_series(%(first_notification)s::int, %(n)s::int) AS j
), s AS (
    SELECT *, r >= %(t0)s::timestamptz - interval '29 days' AS kept,
           CASE WHEN state IN ('processed', 'ignored', 'failed') THEN r + interval '1 s' END AS done,
           CASE WHEN j %% 10 = 1 THEN %(base)s::text || '/partner/v2/transactions/' || txn
                ELSE %(base)s::text || '/partner/v2/transactions/' || txn || '/events/seed-evt-' || j END AS ref
    FROM base
)
INSERT INTO inbox_notification (
    created_at, updated_at, dedupe_key, event_id, resource_type, resource_id, event_type, event_time, product_name,
    resource_ref, body, headers, remote_addr, received_at, state, attempts, duplicates, last_error, enqueued_at,
    processed_at, claimed_until)
SELECT r, CASE WHEN state = 'queued' THEN now() + interval '1 day' ELSE coalesce(done, r) END,
       'id:seed-evt-' || j, 'seed-evt-' || j,
       CASE WHEN j %% 10 = 1 THEN %(transaction_type)s::text ELSE %(event_type)s::text END,
       CASE WHEN j %% 10 = 1 THEN txn ELSE 'seed-evt-' || j END,
       'created', r - interval '1 s', %(product)s::text, ref,
       CASE WHEN kept THEN json_build_object('eventId', 'seed-evt-' || j, 'eventTime', r - interval '1 s',
            'eventType', 'created', 'meta', json_build_object('resourceType',
            CASE WHEN j %% 10 = 1 THEN %(transaction_type)s::text ELSE %(event_type)s::text END, 'resourceId',
            CASE WHEN j %% 10 = 1 THEN txn ELSE 'seed-evt-' || j END, 'instanceId', %(product)s::text,
            'resourceRef', ref))::text ELSE '' END,
       CASE WHEN kept THEN '{"Content-Type": "application/json", "User-Agent": "svc-webhooks/2.1"}'::jsonb
            ELSE '{}'::jsonb END,
       CASE WHEN kept THEN '10.20.30.40'::inet END,
       r, state, CASE WHEN state = 'queued' THEN 0 ELSE 1 END, CASE WHEN j %% 50 = 3 THEN 1 ELSE 0 END,
       CASE WHEN state = 'failed' AND kept THEN 'ServiceError: 500 from the service' ELSE '' END,
       CASE WHEN state = 'refused' THEN NULL ELSE r + interval '200 ms' END, done,
       CASE WHEN state = 'processing' THEN now() + interval '1 hour' END
FROM s ORDER BY j
"""


def history_seed(database: str, *, notifications: int = 1_000_000, orders: int = 100_000, history: bool = True) -> dict:
    """Write the history into `database` (a URL, migrated) and analyze it; row counts and seconds.

    Without `history`, only the work in flight: the 60 open orders and the notifications of their
    transactions (the same rows, under the same ids), so that an empty database and a seeded one
    differ by the history alone.
    """
    import psycopg

    per_order = max(1, notifications // orders)
    params = {
        "first_order": 1 if history else max(1, orders - OPEN_ORDERS + 1),
        "first_notification": 1 if history else max(1, notifications - per_order * OPEN_ORDERS + 1),
        "n": notifications,
        "m": orders,
        "span": SPAN,
        "base": "http://127.0.0.1:9/sandbox",  # the SVC_BASE_URL of the bench's processes
        "product": PRODUCT,
        "transaction_type": TRANSACTION_TYPE,
        "event_type": EVENT_TYPE,
    }
    seconds = {}
    with psycopg.connect(database, autocommit=True) as conn:
        (params["t0"],) = conn.execute("SELECT now() - interval '10 minutes'").fetchone()
        for name, sql in (
            ("orders", _ORDERS),
            ("steps", _STEPS),
            ("attachments", _ATTACHMENTS),
            ("deliveries", _DELIVERIES),
            ("notifications", _NOTIFICATIONS),
        ):
            began = time.monotonic()
            with conn.transaction():
                conn.execute(sql, params)
            seconds[name] = round(time.monotonic() - began, 1)
        began = time.monotonic()
        for table in TABLES:
            conn.execute(f"VACUUM ANALYZE {table}")
        seconds["vacuum_analyze"] = round(time.monotonic() - began, 1)
        rows = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES}  # noqa: S608
        sizes = {
            table: conn.execute("SELECT pg_size_pretty(pg_total_relation_size(%s))", [table]).fetchone()[0]
            for table in TABLES
        }
    return {"rows": rows, "sizes_with_indexes": sizes, "seconds": seconds, "server": stack._safe(database)}

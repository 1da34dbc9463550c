"""How long borrowers' personal data is kept, kind by kind (partner/core/retention.py)."""

from .environment import env

# Borrowers' personal data is kept this many days, then purged
# by the daily task (`core.purge`; `manage.py purge --dry-run` says what it would do): personal fields
# erased with the row kept, or whole rows deleted. Counted from when a row was finished (a
# notification processed, an order completed or failed); nothing of an open order is ever touched.
# 0 keeps that kind for ever.

# partner.inbox: the notifications' bodies and headers, and their rows (dedupe keys);
# refused notifications (evidence of a forged or misdirected webhook) on their own, shorter, days.
RETENTION_NOTIFICATION_BODY_DAYS = env.int("RETENTION_NOTIFICATION_BODY_DAYS", default=30)
RETENTION_NOTIFICATION_DAYS = env.int("RETENTION_NOTIFICATION_DAYS", default=365)
RETENTION_REFUSED_NOTIFICATION_DAYS = env.int("RETENTION_REFUSED_NOTIFICATION_DAYS", default=7)
# partner.fulfillment: an order's response and errors, its attachments' bytes (PDFs), its step rows.
RETENTION_ORDER_DATA_DAYS = env.int("RETENTION_ORDER_DATA_DAYS", default=90)
RETENTION_DOCUMENT_DAYS = env.int("RETENTION_DOCUMENT_DAYS", default=90)
RETENTION_STEP_DAYS = env.int("RETENTION_STEP_DAYS", default=365)
# partner.sandbox: the emulator's transactions and what hangs on them.
RETENTION_SANDBOX_DAYS = env.int("RETENTION_SANDBOX_DAYS", default=7)

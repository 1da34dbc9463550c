"""partner.fulfillment: our company as lenders see it, staff's documents, reconciliation and confirmation."""

from partner.core import demo_values  # constants: the public values of local runs and of the sandbox

from .environment import env

# partner.fulfillment: orders, automated and staff work, deliveries, reconciliation
# ------------------------------------------------------------------------------
# partner/fulfillment/__init__.py
# Our company as lenders see it: `respondingParty` of every response and the letterhead of the
# reports (partner/fulfillment/automated/fulfillers/base.py: partner_party). Public contact details only.
# The defaults are a demo company (partner/core/demo_values.py): `check --deploy` fails on them (partner.E013).
PARTNER_NAME = env.str("PARTNER_NAME", default=demo_values.DEMO_PARTNER["PARTNER_NAME"])
PARTNER_ADDRESS = env.str("PARTNER_ADDRESS", default=demo_values.DEMO_PARTNER["PARTNER_ADDRESS"])  # street line
PARTNER_CITY = env.str("PARTNER_CITY", default=demo_values.DEMO_PARTNER["PARTNER_CITY"])
PARTNER_STATE = env.str("PARTNER_STATE", default=demo_values.DEMO_PARTNER["PARTNER_STATE"])
PARTNER_POSTAL_CODE = env.str("PARTNER_POSTAL_CODE", default=demo_values.DEMO_PARTNER["PARTNER_POSTAL_CODE"])
PARTNER_CONTACT_NAME = env.str("PARTNER_CONTACT_NAME", default=demo_values.DEMO_PARTNER["PARTNER_CONTACT_NAME"])
PARTNER_CONTACT_ROLE = env.str("PARTNER_CONTACT_ROLE", default=demo_values.DEMO_PARTNER["PARTNER_CONTACT_ROLE"])
PARTNER_PHONE = env.str("PARTNER_PHONE", default=demo_values.DEMO_PARTNER["PARTNER_PHONE"])
# The fax is shown where a response carries one.
PARTNER_FAX = env.str("PARTNER_FAX", default=demo_values.DEMO_PARTNER["PARTNER_FAX"])
PARTNER_EMAIL = env.str("PARTNER_EMAIL", default=demo_values.DEMO_PARTNER["PARTNER_EMAIL"])
# A PNG or JPEG drawn at the top left of the reports; none when empty (or unreadable: a warning is
# logged and the report goes out without it).
PARTNER_LOGO_PATH = env.str("PARTNER_LOGO_PATH", default="")
# The largest document staff may attach (its kinds are checked by content, not by name).
DOCUMENT_MAX_BYTES = env.int("DOCUMENT_MAX_BYTES", default=20 * 1024 * 1024)
# How often the reconciliation runs (seconds). Its full pass (every page of the service's
# transaction list) runs at most every RECONCILE_FULL_INTERVAL, in the run that finds it due (its
# time is kept in the database, so a restarted scheduler does not put it off); the other runs read
# only the list's end (partner/fulfillment/recovery/reconciliation.py). 0: every run reads every page.
RECONCILE_INTERVAL = env.int("RECONCILE_INTERVAL", default=300)
RECONCILE_FULL_INTERVAL = env.int("RECONCILE_FULL_INTERVAL", default=86400)
# A delivered order whose "processed" callback has not come after this long is shown as awaiting
# confirmation (admin filter, /healthz warning); the reconciliation completes it when the service's
# transaction list says it is completed, and staff can confirm it by hand.
CONFIRMATION_WAIT_SECONDS = env.int("CONFIRMATION_WAIT_SECONDS", default=900)
# A PATCH whose answer we never recorded (the connection lost, the worker killed, our database away
# when its answer came) may have been accepted: it is sent again only when its "processed" callback
# has not come this long after it left (a callback that comes confirms it, and nothing is sent
# twice). The service's callbacks come within seconds; a longer wait only delays such a delivery.
CALLBACK_WAIT_SECONDS = env.int("CALLBACK_WAIT_SECONDS", default=60)

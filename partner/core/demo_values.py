"""The public values of local runs and of the sandbox: defaults of local runs, refused in production.

One place for them: `config/settings/local.py` uses them as the local defaults,
`config/settings/production.py` refuses them; `partner/core/checks.py` (the `check --deploy`
preflight) reports them. They are in this repository, so they are secrets of nobody. The demo staff
login's password (`make demo`) is refused by `manage.py staff_account` when DEBUG is off.
"""

SANDBOX_CLIENT_ID = "sandbox-partner-client"
SANDBOX_CLIENT_SECRET = "sandbox-partner-client-secret"  # noqa: S105 - public demo value
SANDBOX_SIGNING_SECRET = "sandbox-webhook-signing-secret"  # noqa: S105 - public demo value
LOCAL_SECRET_KEY = "local-development-only-not-secret"  # noqa: S105 - public local value
LOCAL_FIELD_ENCRYPTION_KEY = "bG9jYWwtZGV2LW9ubHkta2V5LW5vdC1zZWNyZXQtMDA="

# The admin login `make demo` creates for working orders (`manage.py staff_account`).
DEMO_STAFF_USERNAME = "staff.demo"
DEMO_STAFF_PASSWORD = "staff-demo-password-1"  # noqa: S105 - public demo value

# The demo company (config/settings/fulfillment.py's PARTNER_* defaults): `check --deploy` fails while any of
# its name, address, phone or e-mail is still on a deployment's reports and responses (partner.E013).
DEMO_PARTNER = {
    "PARTNER_NAME": "Keystone Property Data, Inc.",
    "PARTNER_ADDRESS": "100 Market Street, Suite 400",
    "PARTNER_CITY": "San Francisco",
    "PARTNER_STATE": "CA",
    "PARTNER_POSTAL_CODE": "94105",
    "PARTNER_CONTACT_NAME": "Fulfillment Desk",
    "PARTNER_CONTACT_ROLE": "Order Support",
    "PARTNER_PHONE": "415-555-0142",
    "PARTNER_FAX": "415-555-0143",
    "PARTNER_EMAIL": "orders@keystone-property-data.example",
}

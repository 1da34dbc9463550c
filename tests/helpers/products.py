"""Products in our catalog as a pull stores them, and the demo lender's credentials: `product_create`
(the demo product's credential definitions and lender.demo's partner account) for the order tests,
`product_make` (the sandbox's main product, every listed field) for the catalog's."""

# The demo lender's password, the one the sandbox's host holds for lender.demo (partner/sandbox/demo.py).
DEMO_PASSWORD = "demo-password-1"
# lender.wrong has a partner account, but the host holds another password for it ("not-the-password-9").
WRONG_ACCOUNT_PASSWORD = "the-real-password-1"
# What the host sends as `request.credentials` of lender.demo's orders.
LENDER_CREDENTIALS = {"username": "lender.demo", "password": DEMO_PASSWORD, "companyCode": "DEMO01"}
# The catalog tests' names for the demo user's password and a company's secret credential.
USER_PASSWORD = DEMO_PASSWORD
COMPANY_SECRET = "company-api-key-7f3e9a"


def product_make(name="address-verification", service_id="prod-av-1", **extra):
    """The sandbox's main product as a pull stores it (no credential definitions)."""
    from partner.catalog.models import Product

    product = Product.objects.create(
        service_id=service_id,
        name=name,
        listing_name="Address verification",
        request_types=["NEW_REQUEST"],
        environment="sandbox",
        status="development",
        integration_type="ASYNC",
        **extra,
    )
    return product


def product_create(*, name="address-verification", fulfiller="address_verification", credentials=True, **fields):
    """A product in our catalog as a pull stores it; with `credentials`, the demo product's user and
    company credential definitions and lender.demo's partner account (LENDER_CREDENTIALS)."""
    from partner.catalog.models import CredentialDefinition, Product
    from partner.catalog.services import partner_account_set

    product = Product.objects.create(
        service_id=f"prod-{name}", name=name, request_types=["NEW_REQUEST"], fulfiller=fulfiller, **fields
    )
    if credentials:
        definitions = [
            {"key": "username", "scope": "user", "required": True},
            {"key": "password", "scope": "user", "required": True, "secret": True},
            {"key": "companyCode", "scope": "company"},
        ]
        for position, definition in enumerate(definitions):
            CredentialDefinition.objects.create(product=product, position=position, **definition)
        partner_account_set(username="lender.demo", password=DEMO_PASSWORD, company="DEMO01")
    return product

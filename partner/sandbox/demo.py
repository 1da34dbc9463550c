"""The demo data of the sandbox: one lender instance, its users and loans, and the three products.

Read by `seeding.sandbox_seed`. Some loans carry a city or county that does not
match their ZIP code, so an address verification has something to correct. Two products are
automated (address verification, disclosure delivery); the appraisal is worked by people: its
workflows say `interactive` only, so our catalog gives it the staff-worked fulfiller when it
first pulls it, and its response may carry the loan's `appraisal` besides its `property`.
"""

from partner.platform import formats, urns

INSTANCE_ID = "BE11223344"
INSTANCE_NAME = "Demo Lender Bank"
INSTANCE_ADDRESS = {
    "name": INSTANCE_NAME,
    "address": "100 Market Street",
    "city": "San Francisco",
    "state": "CA",
    "postalCode": "94105",
}
PARTNER_ID = "P-DEMO-0001"
CREATED = "2026-01-05T09:00:00Z"

USERS = [
    {
        "username": "lender.demo",
        "name": "Dana Demo",
        "email": "dana.demo@lender.example",
        "phone": "415-555-0100",
        "role": "Loan Officer",
        "personas": ["Loan Officer"],
        "credentials": {"username": "lender.demo", "password": "demo-password-1", "companyCode": "DEMO01"},
    },
    {
        "username": "lender.nocreds",
        "name": "Noah Nocreds",
        "email": "noah.nocreds@lender.example",
        "phone": "415-555-0101",
        "role": "Processor",
        "personas": ["Loan Processor"],
        "credentials": None,
    },
    {
        "username": "lender.wrong",
        "name": "Wendy Wrong",
        "email": "wendy.wrong@lender.example",
        "phone": "415-555-0102",
        "role": "Loan Officer",
        "personas": ["Loan Officer"],
        # Configured, but the password is not the one of the partner account.
        "credentials": {"username": "lender.wrong", "password": "not-the-password-9", "companyCode": "DEMO01"},
    },
]


def _loan(guid, number, amount, borrower, street, city, state, zip_code, county, purpose="Purchase"):
    return {
        "guid": guid,
        "data": {
            "loanNumber": number,
            "loanAmount": amount,
            "borrower": borrower,
            "property": {
                "streetAddress": street,
                "city": city,
                "state": state,
                "postalCode": zip_code,
                "county": county,
                "loanPurposeType": purpose,
                "propertyUsageType": "PrimaryResidence",
            },
        },
    }


LOANS = [
    # Right: 94105 is San Francisco, San Francisco County.
    _loan(
        "6f1d5a0e-1c2b-4e8a-9a10-000000000001",
        "DEMO-1001",
        850000,
        {"firstName": "Alice", "lastName": "Anders", "email": "alice@borrower.example", "phone": "415-555-0110"},
        "500 Howard Street",
        "San Francisco",
        "CA",
        "94105",
        "San Francisco",
    ),
    # Wrong city: 10001 is New York, not Boston.
    _loan(
        "6f1d5a0e-1c2b-4e8a-9a10-000000000002",
        "DEMO-1002",
        640000,
        {"firstName": "Bruno", "lastName": "Baker", "email": "bruno@borrower.example", "phone": "212-555-0120"},
        "350 5th Avenue",
        "Boston",
        "NY",
        "10001",
        "New York",
    ),
    # Right: 60601 is Chicago, Cook County.
    _loan(
        "6f1d5a0e-1c2b-4e8a-9a10-000000000003",
        "DEMO-1003",
        410000,
        {"firstName": "Chloe", "lastName": "Chen", "email": "chloe@borrower.example", "phone": "312-555-0130"},
        "150 North Michigan Avenue",
        "Chicago",
        "IL",
        "60601",
        "Cook",
        "Refinance",
    ),
    # Wrong city and county: 73301 is Austin, Travis County.
    _loan(
        "6f1d5a0e-1c2b-4e8a-9a10-000000000004",
        "DEMO-1004",
        390000,
        {"firstName": "Diego", "lastName": "Diaz", "email": "diego@borrower.example", "phone": "512-555-0140"},
        "1100 Congress Avenue",
        "Dallas",
        "TX",
        "73301",
        "Dallas",
    ),
    # Wrong county: 94105 is in San Francisco County, not Alameda.
    _loan(
        "6f1d5a0e-1c2b-4e8a-9a10-000000000005",
        "DEMO-1005",
        720000,
        {"firstName": "Erin", "lastName": "Evans", "email": "erin@borrower.example", "phone": "415-555-0150"},
        "101 Spear Street",
        "San Francisco",
        "CA",
        "94105",
        "Alameda",
    ),
]

CREDENTIAL_DEFINITIONS = [
    {
        "id": "username",
        "type": "string",
        "title": "User name",
        "minimum": 4,
        "maximum": 30,
        "pattern": r"^[A-Za-z0-9._-]+$",
        "secret": False,
        "scope": "user",
        "required": True,
    },
    {
        "id": "password",
        "type": "string",
        "title": "Password",
        "minimum": 8,
        "maximum": 30,
        "secret": True,
        "scope": "user",
        "required": True,
    },
    {
        "id": "companyCode",
        "type": "string",
        "title": "Company code",
        "minimum": 2,
        "maximum": 10,
        "pattern": r"^[A-Z0-9]+$",
        "secret": False,
        "scope": "company",
        "required": False,
    },
]

ORIGIN_FIELDS = ["loanNumber", "loanAmount", "property", "borrower"]
REQUEST_FIELDS = ["loanNumber", "loanAmount", "property", "borrower"]
RESPONSE_FIELDS = ["property"]
APPRAISAL_RESPONSE_FIELDS = ["property", "appraisal"]


def _credential_object():
    return {
        "required": [item["id"] for item in CREDENTIAL_DEFINITIONS if item["required"]],
        "properties": {
            item["id"]: {key: value for key, value in item.items() if key not in ("id", "required")}
            for item in CREDENTIAL_DEFINITIONS
        },
    }


def _webhooks(public_base_url: str, slug: str):
    url = f"{public_base_url}/v1/webhooks"
    return [
        {
            "subscriptionId": f"sub-{slug}-transaction",
            "url": url,
            "events": [formats.WEBHOOK_EVENT_CREATED],
            "resource": urns.transaction_resource_type(),
        },
        {
            "subscriptionId": f"sub-{slug}-event",
            "url": url,
            "events": [formats.WEBHOOK_EVENT_CREATED],
            "resource": urns.event_resource_type(),
        },
    ]


def product_documents(public_base_url: str) -> list[dict]:
    """The Product objects of the demo products, pointing at `public_base_url`.

    Long because it is one literal: each document is written out whole, as the
    service stores it, so it reads side by side with the spec.
    """
    creator = urns.partner_user_urn(PARTNER_ID, "sandbox-admin")
    common = {
        "partnerId": PARTNER_ID,
        "environment": "sandbox",
        "status": "development",
        "interfaceUrl": f"{public_base_url}/",
        "adminInterfaceUrl": f"{public_base_url}/admin/",
        "integrationType": "ASYNC",
        "credentials": CREDENTIAL_DEFINITIONS,
        "credential": _credential_object(),
        "extensionLimit": 3,
        "created": CREATED,
        "createdBy": creator,
    }
    access = {"allow": [urns.instance_urn(INSTANCE_ID)], "deny": []}

    def product(*, key, name, listing, request_types, workflows, response_fields, results=()):
        """One demo product: its entitlements cover `request_types` with the same fields."""
        transaction = {
            "requestTypes": request_types,
            "request": {"fields": REQUEST_FIELDS},
            "response": {"fields": response_fields, "results": list(results)},
            "created": CREATED,
            "createdBy": creator,
            "extensionCount": 0,
        }
        return {
            **common,
            "id": f"a1b2c3d4-0000-4000-8000-00000000{key}",
            "name": name,
            "listingName": listing,
            "requestTypes": request_types,
            "tags": {"workflows": workflows, "categories": ["APPRAISAL"], "applications": ["Loan Origination Host"]},
            "entitlements": {
                "access": access,
                "data": {"origin": {"fields": ORIGIN_FIELDS}, "transaction": [transaction]},
            },
            "webhooks": _webhooks(public_base_url, name),
        }

    address = product(
        key="a001",
        name="address-verification",
        listing="Address Verification",
        request_types=["NEW_REQUEST", "ACCEPTED_ORDER"],
        workflows=["automated", "interactive"],
        response_fields=RESPONSE_FIELDS,
    )
    disclosure = product(
        key="d002",
        name="disclosure-delivery",
        listing="Disclosure Delivery",
        request_types=["NEW_REQUEST"],
        workflows=["automated"],
        response_fields=RESPONSE_FIELDS,
        results=[{"action": formats.DISCLOSURE_ACTION, "formats": [formats.DISCLOSURE_FORMAT]}],
    )
    # Worked by staff: interactive only (partner/fulfillment/staff/fulfillers.py).
    appraisal = product(
        key="a003",
        name="appraisal",
        listing="Residential appraisal",
        request_types=["NEW_REQUEST"],
        workflows=["interactive"],
        response_fields=APPRAISAL_RESPONSE_FIELDS,
    )
    return [address, disclosure, appraisal]


def demo_url_fields(document: dict, public_base_url: str) -> dict:
    """The fields of a demo product that follow PUBLIC_BASE_URL (refreshed by every seed)."""
    slug = document["name"]
    return {
        "interfaceUrl": f"{public_base_url}/",
        "adminInterfaceUrl": f"{public_base_url}/admin/",
        "webhooks": _webhooks(public_base_url, slug),
    }

"""Demo data: `sandbox_seed` is idempotent and follows PUBLIC_BASE_URL."""

import zipcodes
from django.core.management import call_command
from django.db import connection

from partner.platform import formats, urns
from partner.sandbox.models import Instance, LenderUser, Loan, Product
from partner.sandbox.seeding import sandbox_seed


def _counts():
    return Instance.objects.count(), LenderUser.objects.count(), Loan.objects.count(), Product.objects.count()


def test_seed_is_idempotent(db):
    first = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    snapshot = {p.name: p.data for p in Product.objects.all()}
    second = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    assert _counts() == (1, 3, 5, 3)
    assert {p.name: p.data for p in Product.objects.all()} == snapshot
    assert {u: user.pk for u, user in first.users.items()} == {u: user.pk for u, user in second.users.items()}


def test_demo_users_and_credentials(db):
    seed = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    assert seed.users["lender.demo"].credentials == {
        "username": "lender.demo",
        "password": "demo-password-1",
        "companyCode": "DEMO01",
    }
    assert seed.users["lender.nocreds"].credentials is None
    assert seed.users["lender.wrong"].credentials["password"] != "demo-password-1"
    # Stored encrypted: the password is not in the column.
    with connection.cursor() as cursor:
        cursor.execute("SELECT credentials_encrypted FROM sandbox_lenderuser WHERE username = %s", ["lender.demo"])
        (stored,) = cursor.fetchone()
    assert stored and "demo-password-1" not in stored


def test_some_loans_have_a_wrong_city_or_county_for_their_zip(db):
    seed = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    mismatched = 0
    for loan in seed.loans:
        place = loan.subject_property
        (known,) = zipcodes.matching(place["postalCode"])
        assert known["state"] == place["state"]
        if known["city"].lower() != place["city"].lower() or not known["county"].lower().startswith(
            place["county"].lower()
        ):
            mismatched += 1
    assert 0 < mismatched < len(seed.loans)


def test_products_and_entitlements(db, settings):
    seed = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    address, disclosure = seed.products["address-verification"], seed.products["disclosure-delivery"]
    assert address.signing_secret == settings.SVC_SIGNING_SECRETS[0]
    assert urns.instance_urn("BE11223344") in address.data["entitlements"]["access"]["allow"]
    assert formats.action_entitled(
        disclosure.data, request_type="NEW_REQUEST", action=formats.DISCLOSURE_ACTION, fmt=formats.DISCLOSURE_FORMAT
    )
    assert not formats.action_entitled(
        address.data, request_type="NEW_REQUEST", action=formats.DISCLOSURE_ACTION, fmt=formats.DISCLOSURE_FORMAT
    )
    for product in (address, disclosure):
        hooks = {hook["resource"]: hook["url"] for hook in product.data["webhooks"]}
        assert hooks == {
            urns.transaction_resource_type(): "http://127.0.0.1:8000/v1/webhooks",
            urns.event_resource_type(): "http://127.0.0.1:8000/v1/webhooks",
        }


def test_seed_follows_the_public_base_url_and_keeps_other_changes(db):
    sandbox_seed(public_base_url="http://127.0.0.1:8000")
    product = Product.objects.get(name="address-verification")
    product.data = {**product.data, "listingName": "Changed by a PUT"}
    product.save()
    sandbox_seed(public_base_url="http://localhost:43210")
    product.refresh_from_db()
    assert {hook["url"] for hook in product.data["webhooks"]} == {"http://localhost:43210/v1/webhooks"}
    assert product.data["interfaceUrl"] == "http://localhost:43210/"
    assert product.data["listingName"] == "Changed by a PUT"
    sandbox_seed(public_base_url="http://localhost:43210", reset=True)
    product.refresh_from_db()
    assert product.data["listingName"] == "Address Verification"


def test_management_command(db, settings, capsys):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8123"
    call_command("sandbox_seed")
    call_command("sandbox_seed")
    assert _counts() == (1, 3, 5, 3)
    assert "http://127.0.0.1:8123/v1/webhooks" in capsys.readouterr().out
    hooks = Product.objects.get(name="disclosure-delivery").data["webhooks"]
    assert {hook["url"] for hook in hooks} == {"http://127.0.0.1:8123/v1/webhooks"}

"""Management commands that need no service: partner_account (password on stdin), and the system check."""

import io
import logging

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from partner.catalog.checks import signing_secrets_check
from partner.catalog.models import PartnerAccount, Product
from partner.fulfillment.staff.fulfillers import StaffWorkedFulfiller
from partner.sandbox.seeding import sandbox_seed
from tests.helpers.products import USER_PASSWORD, product_make

pytestmark = pytest.mark.django_db


class Stdin(io.StringIO):
    def isatty(self):
        return False


def run_partner_account(*args, stdin_text=""):
    out = io.StringIO()
    call_command("partner_account", *args, stdin=Stdin(stdin_text), stdout=out)
    return out.getvalue()


def test_partner_account_creates_with_password_from_stdin(caplog):
    with caplog.at_level(logging.DEBUG):
        output = run_partner_account("lender.demo", "--company", "DEMO01", stdin_text=USER_PASSWORD + "\n")
    account = PartnerAccount.objects.get(username="lender.demo")
    assert account.check_password(USER_PASSWORD)
    assert account.company.name == "DEMO01"
    assert account.company.code == "DEMO01"
    assert "Created partner account lender.demo" in output
    assert USER_PASSWORD not in output
    assert USER_PASSWORD not in caplog.text


def test_partner_account_updates_the_password():
    run_partner_account("lender.demo", stdin_text=USER_PASSWORD + "\n")
    output = run_partner_account("lender.demo", stdin_text="a-new-password-2\n")
    account = PartnerAccount.objects.get(username="lender.demo")
    assert account.check_password("a-new-password-2")
    assert not account.check_password(USER_PASSWORD)
    assert "Updated" in output
    assert PartnerAccount.objects.count() == 1


def test_partner_account_without_password_keeps_it_and_can_deactivate():
    run_partner_account("lender.demo", stdin_text=USER_PASSWORD + "\n")
    run_partner_account("lender.demo", "--inactive", "--company", "Other Co", stdin_text="")
    account = PartnerAccount.objects.get(username="lender.demo")
    assert account.check_password(USER_PASSWORD)
    assert not account.active
    assert account.company.name == "Other Co"


def test_partner_account_new_without_password_fails():
    with pytest.raises(CommandError, match="needs a password"):
        run_partner_account("lender.new", stdin_text="")
    assert not PartnerAccount.objects.exists()


def test_sync_products_needs_a_mode():
    with pytest.raises(CommandError):
        call_command("sync_products")


def test_sync_products_push_of_unknown_product():
    with pytest.raises(CommandError, match="Unknown product"):
        call_command("sync_products", "--push", "--product", "nope")


def test_allow_instance_refuses_a_bad_urn_before_calling_the_service(settings):
    product_make()
    settings.SVC_BASE_URL = "http://127.0.0.1:9/unreachable"  # a call would fail differently
    with pytest.raises(CommandError, match="is not a lender instance URN"):
        call_command("allow_instance", "address-verification", "not-an-urn")


def test_signing_secret_check_warns_in_production_with_the_sandbox_default(settings):
    product = product_make()
    settings.DEBUG = False
    settings.SANDBOX_ENABLED = False
    settings.SVC_SIGNING_SECRETS = ["sandbox-webhook-signing-secret"]
    warnings = signing_secrets_check()
    assert [w.id for w in warnings] == ["catalog.W001"]
    assert product.name in warnings[0].msg
    assert "sandbox-webhook-signing-secret" not in warnings[0].msg

    product.signing_secret = "its-own-secret-123"
    product.save()
    assert signing_secrets_check() == []


def test_signing_secret_check_is_quiet_outside_production_or_with_own_secrets(settings):
    product_make()
    settings.DEBUG = False
    settings.SANDBOX_ENABLED = True
    assert signing_secrets_check() == []
    settings.SANDBOX_ENABLED = False
    settings.SVC_SIGNING_SECRETS = ["a-real-production-secret"]
    assert signing_secrets_check() == []


def test_product_signing_secrets_gives_plaintext_by_product():
    from partner.catalog.selectors import product_signing_secrets

    product_make(signing_secret="secret-one-abcdef")
    product_make(name="other", service_id="p2")
    assert product_signing_secrets() == [("address-verification", "secret-one-abcdef")]


def test_partner_account_reads_the_process_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", Stdin("piped-password-77\nignored second line\n"))
    call_command("partner_account", "lender.piped", stdout=io.StringIO())
    assert PartnerAccount.objects.get(username="lender.piped").check_password("piped-password-77")


def test_product_settings_refuse_what_is_not_valid(db):
    sandbox_seed(public_base_url="http://127.0.0.1:8000")
    with pytest.raises(CommandError, match="no product"):
        call_command("product_settings", "appraisal", "--turnaround-hours", "48", stdout=io.StringIO())
    Product.objects.create(service_id="svc-appraisal", name="appraisal", fulfiller=StaffWorkedFulfiller.key)
    with pytest.raises(CommandError, match="e-mail"):
        call_command("product_settings", "appraisal", "--staff-email", "not an address", stdout=io.StringIO())
    with pytest.raises(CommandError, match="whole number"):
        call_command("product_settings", "appraisal", "--turnaround-hours", "-4", stdout=io.StringIO())
    assert Product.objects.get(name="appraisal").staff_email == ""


def test_product_settings_sets_the_fulfiller_or_changes_nothing(db):
    Product.objects.create(service_id="svc-appraisal", name="appraisal", fulfiller=StaffWorkedFulfiller.key)
    out = io.StringIO()
    call_command("product_settings", "appraisal", "--fulfiller", "connected", stdout=out)
    assert Product.objects.get(name="appraisal").fulfiller == "connected"
    assert "fulfiller connected" in out.getvalue()
    with pytest.raises(CommandError, match="No fulfiller"):
        call_command("product_settings", "appraisal", "--fulfiller", "nobody", "--turnaround-hours", "9")
    product = Product.objects.get(name="appraisal")
    assert (product.fulfiller, product.turnaround_hours) == ("connected", None)

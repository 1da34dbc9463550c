"""The one credential check: definition rules, user scope against accounts, company scope, no echoed value."""

import json
import threading
import time

import pytest

from partner.catalog.credentials import credentials_check
from partner.catalog.models import CredentialDefinition
from tests.helpers.products import COMPANY_SECRET, USER_PASSWORD

pytestmark = pytest.mark.django_db


def creds(**overrides):
    values = {"username": "lender.demo", "password": USER_PASSWORD, "companyCode": "DEMO01"}
    values.update(overrides)
    return {k: v for k, v in values.items() if v is not None}


def codes(check):
    return {(e["field"], e["code"]) for e in check.errors}


def assert_no_value_echoed(check, *values):
    text = check.message + json.dumps(check.errors)
    for value in values:
        assert value not in text


def test_valid_credentials_give_the_account(product, account):
    check = credentials_check(product=product, credentials=creds())
    assert check.ok, check.errors
    assert check.account == account
    account.refresh_from_db()
    assert account.last_checked_at is not None


def test_company_value_is_optional(product, account):
    check = credentials_check(product=product, credentials=creds(companyCode=None))
    assert check.ok
    assert check.account == account


@pytest.mark.parametrize("missing", ["username", "password"])
def test_required(product, account, missing):
    check = credentials_check(product=product, credentials=creds(**{missing: None}))
    assert not check.ok
    assert (missing, "required") in codes(check)


def test_no_credentials_at_all(product, account):
    check = credentials_check(product=product, credentials={})
    assert not check.ok
    assert codes(check) == {("username", "required"), ("password", "required")}
    assert check.account is None


def test_minimum_length(product, account):
    check = credentials_check(product=product, credentials=creds(password="short1"))
    assert not check.ok
    assert codes(check) == {("password", "min_length")}
    assert_no_value_echoed(check, "short1")


def test_maximum_length(product, account):
    long_secret = "p" * 31
    check = credentials_check(product=product, credentials=creds(password=long_secret))
    assert codes(check) == {("password", "max_length")}
    assert_no_value_echoed(check, long_secret)


def test_pattern(product, account):
    check = credentials_check(product=product, credentials=creds(username="Lender!Demo"))
    assert codes(check) == {("username", "pattern")}
    assert_no_value_echoed(check, "Lender!Demo")


def test_unknown_property_is_refused(product, account):
    check = credentials_check(product=product, credentials=creds(extra="something-else"))
    assert ("extra", "unknown") in codes(check)
    assert_no_value_echoed(check, "something-else")


def test_non_text_value(product, account):
    check = credentials_check(product=product, credentials=creds(username=12345))
    assert ("username", "type") in codes(check)


def test_wrong_password_never_echoed(product, account):
    wrong = "wrong-password-99"
    check = credentials_check(product=product, credentials=creds(password=wrong))
    assert not check.ok
    assert check.account is None
    assert ("password", "invalid") in codes(check)
    assert_no_value_echoed(check, wrong, USER_PASSWORD)


def test_unknown_user_answers_like_a_wrong_password(product, account):
    unknown = credentials_check(product=product, credentials=creds(username="nobody.here"))
    wrong = credentials_check(product=product, credentials=creds(password="wrong-password-99"))
    assert not unknown.ok
    assert unknown.message == wrong.message
    assert unknown.errors == wrong.errors
    assert_no_value_echoed(unknown, "nobody.here")


def test_inactive_account(product, account):
    account.active = False
    account.save()
    check = credentials_check(product=product, credentials=creds())
    assert not check.ok
    assert ("username", "inactive") in codes(check)


def test_company_scope_must_match_the_accounts_company(product, account):
    check = credentials_check(product=product, credentials=creds(companyCode="OTHER9"))
    assert not check.ok
    assert codes(check) == {("companyCode", "company_mismatch")}
    assert_no_value_echoed(check, "OTHER9", "DEMO01")


def test_company_scope_secret_value_is_checked_against_the_encrypted_value(product, company_with_secret):
    CredentialDefinition.objects.create(product=product, key="apiKey", secret=True, scope="company", required=True)
    good = credentials_check(product=product, credentials=creds(apiKey=COMPANY_SECRET))
    assert good.ok, good.errors
    bad = credentials_check(product=product, credentials=creds(apiKey="not-the-company-key"))
    assert codes(bad) == {("apiKey", "company_mismatch")}
    assert_no_value_echoed(bad, COMPANY_SECRET, "not-the-company-key")


def test_secret_company_value_without_stored_value_is_refused(product, account):
    # The company code is only a default for non-secret values.
    CredentialDefinition.objects.create(product=product, key="apiKey", secret=True, scope="company", required=True)
    check = credentials_check(product=product, credentials=creds(apiKey="DEMO01"))
    assert codes(check) == {("apiKey", "company_mismatch")}


def test_company_scope_without_an_account_is_refused(db):
    from tests.helpers.products import product_make

    product = product_make(name="company-only", service_id="prod-c-1")
    CredentialDefinition.objects.create(product=product, key="companyCode", scope="company", required=True)
    check = credentials_check(product=product, credentials={"companyCode": "DEMO01"})
    assert not check.ok
    assert codes(check) == {("companyCode", "company_mismatch")}


def test_product_without_definitions(db):
    from tests.helpers.products import product_make

    product = product_make(name="open", service_id="prod-open")
    assert credentials_check(product=product, credentials={}).ok
    assert codes(credentials_check(product=product, credentials={"x": "y"})) == {("x", "unknown")}


def test_secret_values_are_masked_in_later_logs(product, account, caplog):
    import logging

    from partner.core.logging import RedactSecretsFilter

    secret = "another-secret-value-42"
    credentials_check(product=product, credentials=creds(password=secret))
    logger = logging.getLogger("tests.catalog")
    handler_filter = RedactSecretsFilter()
    caplog.handler.addFilter(handler_filter)
    try:
        with caplog.at_level(logging.INFO):
            logger.info("the user typed %s", secret)
    finally:
        caplog.handler.removeFilter(handler_filter)
    assert secret not in caplog.text


class TestAcceptedPasswordRemembered:
    """The slow hash runs once per account and password for a while, never at the cost of a rule."""

    @pytest.fixture
    def hashes(self, monkeypatch):
        from partner.catalog.models import PartnerAccount

        calls = []
        original = PartnerAccount.check_password

        def counted(self, raw_password):
            calls.append(self.username)
            return original(self, raw_password)

        monkeypatch.setattr(PartnerAccount, "check_password", counted)
        return calls

    def test_second_check_skips_the_hash_and_still_gives_the_account(self, product, account, hashes):
        assert credentials_check(product=product, credentials=creds()).ok
        again = credentials_check(product=product, credentials=creds())
        assert again.ok and again.account == account
        assert hashes == ["lender.demo"]

    def test_nothing_of_the_password_is_in_the_cache_key(self, product, account, monkeypatch):
        from django.core.cache import cache

        keys = []
        original_set = cache.set
        monkeypatch.setattr(cache, "set", lambda key, *a, **k: keys.append(key) or original_set(key, *a, **k))
        credentials_check(product=product, credentials=creds())
        assert keys and all(USER_PASSWORD not in key for key in keys)

    def test_threads_checking_one_password_at_once_hash_it_once(self, account, monkeypatch):
        """A batch of one lender's orders on a worker's threads: the first thread hashes, the others
        wait for its answer instead of each paying for the slow hash (here made as slow as in
        production, so that every thread would miss the cache without the wait)."""
        from partner.catalog import credentials
        from partner.catalog.models import PartnerAccount

        calls = []
        original = PartnerAccount.check_password

        def slow(self, raw_password):
            calls.append(self.username)
            time.sleep(0.2)
            return original(self, raw_password)

        monkeypatch.setattr(PartnerAccount, "check_password", slow)
        barrier, answers = threading.Barrier(8), []

        def check():
            barrier.wait()
            answers.append(credentials._password_accepted(account, USER_PASSWORD))

        threads = [threading.Thread(target=check) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert answers == [True] * 8
        assert calls == ["lender.demo"]
        assert credentials._checking == {}  # nothing kept once the checks are done

    def test_a_refusal_is_not_remembered(self, product, account, hashes):
        assert not credentials_check(product=product, credentials=creds(password="wrong-password-1")).ok
        assert not credentials_check(product=product, credentials=creds(password="wrong-password-1")).ok
        assert hashes == ["lender.demo", "lender.demo"]

    def test_a_changed_password_is_refused_at_once(self, product, account):
        assert credentials_check(product=product, credentials=creds()).ok
        account.set_password("another-password-2")
        account.save()
        assert not credentials_check(product=product, credentials=creds()).ok
        assert credentials_check(product=product, credentials=creds(password="another-password-2")).ok

    def test_a_disabled_account_is_refused_at_once(self, product, account):
        assert credentials_check(product=product, credentials=creds()).ok
        account.active = False
        account.save()
        check = credentials_check(product=product, credentials=creds())
        assert not check.ok
        assert ("username", "inactive") in codes(check)

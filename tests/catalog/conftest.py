"""Fixtures of the catalog tests: a product like the sandbox's main one, accounts, an admin client."""

import pytest

from partner.catalog.models import CompanyCredential, CredentialDefinition
from partner.catalog.services import partner_account_set
from tests.helpers.products import COMPANY_SECRET, USER_PASSWORD, product_make


@pytest.fixture
def product(db):
    product = product_make()
    CredentialDefinition.objects.create(
        product=product,
        key="username",
        title="User name",
        minimum=4,
        maximum=30,
        pattern=r"[a-z][a-z0-9._-]*",
        scope="user",
        required=True,
        position=0,
    )
    CredentialDefinition.objects.create(
        product=product,
        key="password",
        title="Password",
        minimum=8,
        maximum=30,
        secret=True,
        scope="user",
        required=True,
        position=1,
    )
    CredentialDefinition.objects.create(
        product=product,
        key="companyCode",
        title="Company code",
        scope="company",
        required=False,
        position=2,
    )
    return product


@pytest.fixture
def account(db):
    account, _ = partner_account_set(username="lender.demo", password=USER_PASSWORD, company="DEMO01")
    return account


@pytest.fixture
def company_with_secret(account):
    CompanyCredential.objects.create(company=account.company, key="apiKey", value=COMPANY_SECRET, secret=True)
    return account.company


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("staff", "staff@example.com", "staff-password-1")
    client.force_login(user)
    return client

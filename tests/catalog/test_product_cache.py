"""The product of an order from the catalog kept in the shared cache: no SQL once cached, every change
seen by the next order (admin saves, renames, deletions, commits), no secret cached, and orders that
go on when the cache fails."""

import logging
import pickle

import pytest
from django.core.cache import cache
from django.core.cache.backends.base import BaseCache
from django.db import connection, transaction
from django.db.models import ExpressionWrapper, F, TextField
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from partner.catalog import product_cache, services
from partner.catalog.credentials import credentials_check
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import CredentialDefinition, Product
from partner.catalog.product_cache import CATALOG_CACHE_KEY, CONNECTED_CACHE_KEY, catalog_connected
from partner.catalog.services import product_for_order
from tests.helpers.product_page import change_url, listed_fields, product_post_data
from tests.helpers.products import USER_PASSWORD, product_make

pytestmark = pytest.mark.django_db

SERVICE_ID = "prod-av-1"
CREDENTIALS = {"username": "lender.demo", "password": USER_PASSWORD, "companyCode": "DEMO01"}
SIGNING_SECRET = "whsec-plaintext-5d1e77c2"


def definitions_table_read(queries) -> bool:
    return any(CredentialDefinition._meta.db_table in q["sql"] for q in queries.captured_queries)


def test_once_cached_an_order_reads_its_product_and_definitions_without_sql(
    product, account, django_assert_num_queries
):
    with django_assert_num_queries(2):  # the catalog and its definitions, once
        product_for_order(service_id=SERVICE_ID, name=None)

    with django_assert_num_queries(0):
        cached = product_for_order(service_id=SERVICE_ID, name="address-verification")
        keys = [d.key for d in cached.credential_definitions.all()]
    assert cached.pk == product.pk
    assert keys == ["username", "password", "companyCode"]

    # The credential check reads the account and the company (fresh), never the definitions.
    with CaptureQueriesContext(connection) as queries:
        check = credentials_check(product=cached, credentials=CREDENTIALS)
    assert check.ok, check.errors
    assert check.account == account
    assert queries.captured_queries and not definitions_table_read(queries)
    assert not credentials_check(product=cached, credentials={**CREDENTIALS, "password": "wrong-password-1"}).ok


def test_same_lookup_as_product_get(product):
    other = product_make(name="disclosure-desk", service_id="prod-dd-1")
    assert product_for_order(service_id="prod-dd-1", name="address-verification").pk == other.pk
    assert product_for_order(service_id=None, name="address-verification").pk == product.pk
    assert product_for_order(service_id="prod-unknown", name="disclosure-desk").pk == other.pk


def test_a_product_not_in_the_catalog_is_pulled_as_product_ensure_does(product, monkeypatch):
    listed = {"id": "prod-new-1", "name": "new-product", "requestTypes": ["NEW_REQUEST"]}
    listing = {"prod-new-1": listed, "prod-clash": {"id": "prod-clash", "name": "address-verification"}}
    monkeypatch.setattr(services, "service_product_find", lambda service_id=None, name=None: listing.get(service_id))
    product_for_order(service_id=SERVICE_ID, name=None)  # the catalog cached without it

    pulled = product_for_order(service_id="prod-new-1", name="new-product")
    assert pulled.name == "new-product"
    assert Product.objects.filter(service_id="prod-new-1").exists()
    assert product_for_order(service_id="prod-new-1", name=None).pk == pulled.pk  # stored: now in the catalog

    with pytest.raises(ProductNotFound):
        product_for_order(service_id="prod-nowhere", name="nowhere")
    with pytest.raises(ProductSyncError):  # its name is taken by another local product
        product_for_order(service_id="prod-clash", name=None)
    with pytest.raises(ValueError):
        product_for_order(service_id=None, name=None)


def test_an_admin_save_of_a_definition_or_the_product_is_seen_by_the_next_order(staff_client, product):
    for field, value in listed_fields().items():
        setattr(product, field, value)
    product.save()
    assert product_for_order(service_id=SERVICE_ID, name=None).listing_name == "Address verification"

    data = product_post_data(staff_client, product, listing_name="Address check")
    title = next(key for key, value in data.items() if key.endswith("-title") and value == "User name")
    data[title] = "Lender user name"
    data.pop(title.replace("-title", "-required"))  # unchecked

    def read_meanwhile(sender, **kwargs):  # another worker, between the admin's saves and its .update()
        product_cache.catalog_products()

    post_save.connect(read_meanwhile, sender=CredentialDefinition, weak=False)
    try:
        assert staff_client.post(change_url(product), data).status_code == 302
    finally:
        post_save.disconnect(read_meanwhile, sender=CredentialDefinition)

    seen = product_for_order(service_id=SERVICE_ID, name=None)
    assert seen.listing_name == "Address check"
    assert seen.unpushed_changes  # set by the admin with .update() after the save
    username = next(d for d in seen.credential_definitions.all() if d.key == "username")
    assert (username.title, username.required) == ("Lender user name", False)


def test_a_definition_added_changed_or_deleted_is_seen_by_the_next_order(product):
    def keys():
        return [d.key for d in product_for_order(service_id=SERVICE_ID, name=None).credential_definitions.all()]

    assert keys() == ["username", "password", "companyCode"]
    CredentialDefinition.objects.create(product=product, key="branch", position=3)
    assert keys() == ["username", "password", "companyCode", "branch"]
    CredentialDefinition.objects.filter(key="companyCode").delete()  # a queryset's delete
    assert keys() == ["username", "password", "branch"]
    definition = CredentialDefinition.objects.get(key="branch")
    definition.position = 0
    definition.save()
    assert keys() == ["branch", "username", "password"]


def test_a_rename_and_a_deletion_are_seen_by_the_next_order(product, monkeypatch):
    monkeypatch.setattr(services, "service_product_find", lambda service_id=None, name=None: None)
    assert product_for_order(service_id=None, name="address-verification").pk == product.pk

    product.name = "address-check"
    product.save()
    assert product_for_order(service_id=None, name="address-check").pk == product.pk
    with pytest.raises(ProductNotFound):
        product_for_order(service_id=None, name="address-verification")

    product.delete()
    with pytest.raises(ProductNotFound):
        product_for_order(service_id=SERVICE_ID, name="address-check")


def test_a_change_in_a_transaction_is_seen_after_its_commit(product, django_capture_on_commit_callbacks):
    old = product_cache.products_load()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        product.listing_name = "Committed name"
        product.save()
        # A worker read the rows before the commit and stores them inside the writer's window...
        product_cache.catalog_store(old)
    assert product_for_order(service_id=SERVICE_ID, name=None).listing_name == "Committed name"

    # ...or just after the commit: the commit's marker refuses the old copy.
    product_cache.catalog_store(old)
    assert product_for_order(service_id=SERVICE_ID, name=None).listing_name == "Committed name"
    assert cache.get(CATALOG_CACHE_KEY) == product_cache.CHANGED_MARKER  # readers go to the database meanwhile


def test_the_connected_products_names_sit_under_a_small_key_dropped_with_the_catalog(
    product, django_assert_num_queries, django_capture_on_commit_callbacks
):
    # Every announcement of every order asks whether any product is connected: a few names answer.
    assert catalog_connected() == frozenset()
    with django_assert_num_queries(0):
        assert catalog_connected() == frozenset()
    assert cache.get(CONNECTED_CACHE_KEY) == frozenset()

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        services.product_fulfiller_set(name=product.name, fulfiller=CONNECTED)
        # A worker read the old names before the commit and stores them inside the writer's window...
        cache.add(CONNECTED_CACHE_KEY, frozenset())
    assert catalog_connected() == {"address-verification"}
    # ...or just after it: the commit's marker refuses them, as it refuses the old catalog.
    cache.add(CONNECTED_CACHE_KEY, frozenset())
    assert cache.get(CONNECTED_CACHE_KEY) == product_cache.CHANGED_MARKER
    assert catalog_connected() == {"address-verification"}

    cache.delete(CONNECTED_CACHE_KEY)  # the marker gone: the names stored again, from the catalog
    assert catalog_connected() == {"address-verification"}
    with django_assert_num_queries(0):
        assert catalog_connected() == {"address-verification"}
    product.delete()
    assert catalog_connected() == frozenset()


def test_the_cached_catalog_holds_no_secret(product, monkeypatch):
    product.signing_secret = SIGNING_SECRET
    product.save()
    stored = ExpressionWrapper(F("signing_secret"), output_field=TextField())  # as stored, not decrypted
    ciphertext = Product.objects.annotate(stored=stored).values_list("stored", flat=True).get(pk=product.pk)
    assert ciphertext and SIGNING_SECRET not in ciphertext

    handed = []
    add = cache.add

    def add_recorded(key, value, *args, **kwargs):
        handed.append(value)
        return add(key, value, *args, **kwargs)

    monkeypatch.setattr(product_cache.cache, "add", add_recorded)
    cached = product_for_order(service_id=SERVICE_ID, name=None)
    assert len(handed) == 1
    payload = pickle.dumps(handed[0], pickle.HIGHEST_PROTOCOL)  # what the cache backends store
    assert SIGNING_SECRET.encode() not in payload
    assert ciphertext.encode() not in payload
    assert "signing_secret" in cached.get_deferred_fields()
    assert cached.signing_secret == SIGNING_SECRET  # read from the database when asked for


class BrokenCache(BaseCache):
    """A cache whose server is away: every call raises."""

    def __init__(self, location, params):
        super().__init__(params)

    def _away(self, *args, **kwargs):
        raise ConnectionError("cache server away")

    get = add = set = delete = has_key = touch = clear = _away


def test_a_broken_cache_never_fails_an_order(product, settings, caplog):
    settings.CACHES = {"default": {"BACKEND": f"{__name__}.BrokenCache"}}
    product_cache._failures.answered()  # a previous test's failure logged
    with caplog.at_level(logging.WARNING, logger="partner.catalog"):
        first = product_for_order(service_id=SERVICE_ID, name=None)
        second = product_for_order(service_id=None, name="address-verification")
        assert catalog_connected() == frozenset()  # the connected products' names: the database's too
        product.listing_name = "Saved while the cache is away"
        product.save()  # the drop fails: logged, the save stands
    assert first.pk == second.pk == product.pk
    assert [d.key for d in second.credential_definitions.all()] == ["username", "password", "companyCode"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("failed to read the products" in w for w in warnings) == 1  # once, not per order
    assert any("failed to drop" in w for w in warnings)
    assert all("cache server away" not in w for w in warnings)  # the type, never the backend's text
    assert Product.objects.get(pk=product.pk).listing_name == "Saved while the cache is away"

"""The sandbox's demo data put in the database: the lender instance, its users and loans, the products.

What the data is lives in `demo`; this module creates it or brings it up to date
(the `sandbox_seed` command, `make run` and the tests' fixtures call it).
"""

from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction as db_transaction

from . import demo
from .models import Instance, LenderUser, Loan, Product


@dataclass
class Seed:
    instance: Instance
    users: dict[str, LenderUser] = field(default_factory=dict)
    loans: list[Loan] = field(default_factory=list)
    products: dict[str, Product] = field(default_factory=dict)


@db_transaction.atomic
def sandbox_seed(*, public_base_url: str | None = None, reset: bool = False) -> Seed:
    """Create the demo data, or bring it up to date (idempotent).

    An existing demo product keeps what was PUT or PATCHed into it except its
    interface and webhook URLs, which follow `public_base_url`, and its signing
    secret, which is the first of SVC_SIGNING_SECRETS; `reset` restores it whole.
    """
    base = (public_base_url or settings.PUBLIC_BASE_URL).rstrip("/")
    instance, _ = Instance.objects.update_or_create(
        instance_id=demo.INSTANCE_ID, defaults={"name": demo.INSTANCE_NAME, "address": demo.INSTANCE_ADDRESS}
    )
    seed = Seed(instance=instance)
    for item in demo.USERS:
        user = LenderUser.objects.filter(username=item["username"]).first() or LenderUser(username=item["username"])
        user.instance = instance
        for name in ("name", "email", "phone", "role", "personas"):
            setattr(user, name, item[name])
        if user.credentials != item["credentials"]:
            user.credentials = item["credentials"]
        user.save()
        seed.users[user.username] = user
    for item in demo.LOANS:
        loan, _ = Loan.objects.update_or_create(
            guid=item["guid"], defaults={"instance": instance, "data": item["data"]}
        )
        seed.loans.append(loan)
    if not settings.SVC_SIGNING_SECRETS:
        raise ImproperlyConfigured(
            "The sandbox signs its webhooks with the first of SVC_SIGNING_SECRETS: set it to seed the sandbox."
        )
    secret = settings.SVC_SIGNING_SECRETS[0]
    for document in demo.product_documents(base):
        product = Product.objects.filter(service_id=document["id"]).first()
        if product is None or reset:
            product = product or Product(service_id=document["id"])
            product.name = document["name"]
            product.data = document
        else:
            product.data = {**product.data, **demo.demo_url_fields(product.data | {"name": product.name}, base)}
        if product.signing_secret != secret:
            product.signing_secret = secret
        product.save()
        seed.products[product.name] = product
    return seed

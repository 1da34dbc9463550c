"""Periodic pull of the products from the service, so entitlement changes made there reach us."""

from celery import shared_task

from partner.catalog.services import products_pull


@shared_task(name="catalog.pull")
def pull():
    return str(products_pull(keep_unpushed=True))

"""System checks of the catalog: webhooks verified with the sandbox's public signing secret."""

from django.conf import settings
from django.core.checks import Error, Warning, register
from django.db import DatabaseError

from partner.core.demo_values import SANDBOX_SIGNING_SECRET


@register("catalog")
def signing_secrets_demo_check(app_configs=None, **kwargs):
    """catalog.E001: with DJANGO_DEBUG off, SVC_SIGNING_SECRETS holds the sandbox's public secret.

    Every secret (the settings' and each product's) is accepted for every webhook, so products having
    their own secrets change nothing: anyone can sign. Settings refuse this at start-up; this catches a
    settings module that sets it afterwards, on every check, not only `check --deploy`.
    """
    if settings.DEBUG or SANDBOX_SIGNING_SECRET not in list(settings.SVC_SIGNING_SECRETS):
        return []
    return [
        Error(
            "SVC_SIGNING_SECRETS holds the sandbox's public signing secret with DJANGO_DEBUG off: anyone can "
            "sign a webhook for any product, whatever the products' own secrets.",
            hint="Remove it from SVC_SIGNING_SECRETS (leave it empty when each product has its own secret).",
            id="catalog.E001",
        )
    ]


@register("catalog")
def signing_secrets_check(app_configs=None, **kwargs):
    """catalog.W001: in production, a product without its own signing secret while
    SVC_SIGNING_SECRETS is still the sandbox default accepts webhooks anyone can sign.

    It names those products; catalog.E001 is the error itself, with or without them."""
    production = not settings.DEBUG and not settings.SANDBOX_ENABLED
    if not production or SANDBOX_SIGNING_SECRET not in list(settings.SVC_SIGNING_SECRETS):
        return []
    from .models import Product

    try:
        names = [p.name for p in Product.objects.only("name", "signing_secret") if not p.has_signing_secret]
    except DatabaseError:  # not migrated yet: nothing to check
        return []
    if not names:
        return []
    return [
        Warning(
            f"Product(s) without a signing secret: {', '.join(sorted(names))}; SVC_SIGNING_SECRETS is the "
            "sandbox default, so their webhooks are verified with a publicly known secret.",
            hint="Set each product's signing secret in the admin, or set SVC_SIGNING_SECRETS.",
            id="catalog.W001",
        )
    ]

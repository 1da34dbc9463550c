"""System checks of the catalog: warn when webhooks would be verified with the sandbox's secret only."""

from django.conf import settings
from django.core.checks import Warning, register
from django.db import DatabaseError

SANDBOX_SIGNING_SECRET = "sandbox-webhook-signing-secret"  # noqa: S105 - the public sandbox default


@register("catalog")
def signing_secrets_check(app_configs=None, **kwargs):
    """catalog.W001: in production, a product without its own signing secret while
    SVC_SIGNING_SECRETS is still the sandbox default accepts webhooks anyone can sign."""
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

"""ASGI entry point, for servers that speak ASGI."""

import os

import django
from django.core.asgi import get_asgi_application

# A deployment's server: production settings unless DJANGO_SETTINGS_MODULE names others (a server
# refuses to start without what a deployment must give, so a forgotten variable never runs local settings).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

django.setup(set_prefix=False)
from partner.core.checks import preflight_at_start  # noqa: E402 - after django.setup()

preflight_at_start()  # every unsafe or missing setting in one message (PREFLIGHT_AT_START)

application = get_asgi_application()

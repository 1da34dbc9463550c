"""ASGI entry point, for servers that speak ASGI."""

import os

from django.core.asgi import get_asgi_application

# A deployment's server: production settings unless DJANGO_SETTINGS_MODULE names others (they refuse
# to start without what a deployment must give, so a forgotten variable never runs local settings).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

application = get_asgi_application()

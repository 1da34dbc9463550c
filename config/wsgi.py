"""WSGI entry point: `gunicorn config.wsgi`.

Exactly `POST /v1/webhooks` goes to Django's handler without the middleware a webhook never needs
(partner/inbox/webhook_wsgi.py); every other request to Django's handler and the whole MIDDLEWARE.
Both answer through the URL map: the webhook's view is the one the test client reaches.
"""

import os

import django
from django.core.wsgi import get_wsgi_application

# A deployment's server: production settings unless DJANGO_SETTINGS_MODULE names others (a server
# refuses to start without what a deployment must give, so a forgotten variable never runs local settings).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

django.setup(set_prefix=False)
from partner.core.checks import preflight_at_start  # noqa: E402 - after django.setup()

# Every unsafe or missing setting in one message, before a request is served (PREFLIGHT_AT_START).
preflight_at_start()

django_application = get_wsgi_application()

from partner.inbox.webhook_wsgi import WEBHOOK_PATH, WebhookHandler  # noqa: E402 - after django.setup()

webhook_application = WebhookHandler()


def application(environ, start_response):
    if environ.get("PATH_INFO") == WEBHOOK_PATH and environ.get("REQUEST_METHOD") == "POST":
        return webhook_application(environ, start_response)
    return django_application(environ, start_response)


# What the first publish would load (the broker's transport, Celery's sender, the result backend), at
# start rather than in the first staff delivery of each worker (partner/core/enqueue.py).
from partner.core.enqueue import publisher_prepare  # noqa: E402 - after django.setup()

publisher_prepare()

# The process is loaded: its heap is kept out of the collector's full passes (partner/core/heap.py).
from partner.core.heap import loaded_freeze  # noqa: E402 - after django.setup()

loaded_freeze()

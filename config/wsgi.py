"""WSGI entry point: `gunicorn config.wsgi`.

Exactly `POST /v1/webhooks` goes to the inbox's lean path (partner/inbox/webhook_wsgi.py: the
webhook's answer without the middleware stack, the URL resolver and DRF, the middleware's work
for it kept); every other request to Django's handler and the whole MIDDLEWARE.
"""

import os

from django.core.wsgi import get_wsgi_application

# A deployment's server: production settings unless DJANGO_SETTINGS_MODULE names others (they refuse
# to start without what a deployment must give, so a forgotten variable never runs local settings).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

django_application = get_wsgi_application()

from partner.inbox.webhook_wsgi import WEBHOOK_PATH, WebhookApplication  # noqa: E402 - after django.setup()

webhook_application = WebhookApplication(django_application)


def application(environ, start_response):
    if environ.get("PATH_INFO") == WEBHOOK_PATH and environ.get("REQUEST_METHOD") == "POST":
        return webhook_application(environ, start_response)
    return django_application(environ, start_response)

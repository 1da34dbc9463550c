"""The emulated platform's gunicorn in the order benchmarks (bench/harness/platform_settings.py): the
sandbox's views without our middleware and without a health-check query per request."""

import json
import subprocess
import sys

from bench.harness import stack
from bench.harness.platform import PLATFORM_SETTINGS

# In a process of its own, configured as `Platform.web` is (no database: the token's rows and the
# fault rules left out): a token asked of the sandbox through Django's handler, and its answer.
SCRIPT = """
import json, django
from urllib.parse import urlencode
django.setup()
from django.conf import settings
from django.test import Client
from unittest import mock
from partner.sandbox import api, faults, tokens
form = {"grant_type": "client_credentials", "client_id": settings.SVC_CLIENT_ID,
        "client_secret": settings.SVC_CLIENT_SECRET}
no_database = [mock.patch.object(tokens.AccessToken.objects, name) for name in ("create", "filter")]
with no_database[0], no_database[1], mock.patch.object(api, "fault_for", lambda endpoint: faults.NO_FAULT):
    answer = Client(HTTP_HOST="127.0.0.1").post(
        "/sandbox/oauth2/v1/token", urlencode(form), content_type="application/x-www-form-urlencoded"
    )
print(json.dumps({"status": answer.status_code, "middleware": settings.MIDDLEWARE,
                  "health_checks": settings.DATABASES["default"]["CONN_HEALTH_CHECKS"],
                  "headers": sorted(answer.headers)}))
"""


def test_the_platform_answers_without_our_middleware():
    env = stack.app_env(
        database="postgres://nobody@127.0.0.1:9/none", public_base_url="http://127.0.0.1:9", sandbox=True
    )
    env["DJANGO_SETTINGS_MODULE"] = PLATFORM_SETTINGS
    ran = subprocess.run([sys.executable, "-c", SCRIPT], cwd=stack.ROOT, env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    found = json.loads(ran.stdout.strip().splitlines()[-1])
    assert found["status"] == 200
    assert found["middleware"] == [] and found["health_checks"] is False
    assert "X-Request-ID" not in found["headers"] and "X-Frame-Options" not in found["headers"]

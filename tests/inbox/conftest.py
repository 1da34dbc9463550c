import uuid

import pytest

from tests.helpers.front_door import wsgi_call


@pytest.fixture
def signed_post(settings):
    """POST a body to /v1/webhooks through `config.wsgi`, as gunicorn hands it over, signed with the first
    accepted secret (or `secret=`, or `signature=`; "" for none). tests/conftest.py's own goes through the
    test client; the inbox's tests go through what production runs."""
    from partner.platform.signatures import signature_compute

    def post(body: bytes, *, secret=None, signature=None, app=None, **environ):
        if signature is None:
            signature = signature_compute(body, secret or settings.SVC_SIGNING_SECRETS[0])
        header = "HTTP_" + settings.SVC_SIGNATURE_HEADER.upper().replace("-", "_")
        extra = {header: signature} if signature != "" else {}
        return wsgi_call(body, app=app, **extra, **environ)

    return post


@pytest.fixture
def signer(settings):
    """Two products with secrets of their own: `signer`'s secret (`secret`) signing a body that names
    `victim` (secret `victim_secret`) is a refused webhook; the deployment's (`deployment_secret`, all
    of SVC_SIGNING_SECRETS) signs for both. Unique names, so that the refusal counters of the shared
    cache are this test's alone."""
    from partner.inbox.intake import signing_secrets_forget
    from tests.helpers.products import product_create

    deployment_secret = "deployment-wide-secret-2026"
    settings.SVC_SIGNING_SECRETS = [deployment_secret]
    suffix = uuid.uuid4().hex[:8]
    names = {"signer": f"signer-{suffix}", "victim": f"victim-{suffix}"}
    secrets = {"secret": f"secret-of-the-signer-{suffix}", "victim_secret": f"secret-of-the-victim-{suffix}"}
    product_create(name=names["signer"], signing_secret=secrets["secret"])
    product_create(name=names["victim"], signing_secret=secrets["victim_secret"], credentials=False)
    signing_secrets_forget()
    yield {**names, **secrets, "deployment_secret": deployment_secret}
    signing_secrets_forget()

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

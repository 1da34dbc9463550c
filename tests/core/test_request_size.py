"""Uploads are refused early: a body whose Content-Length is past REQUEST_MAX_BYTES is answered 413
before a byte of it is read (Django alone streamed a multipart body's files to disk whatever their
size, and the staff upload checked the size only once the whole body had come)."""

import io

import pytest
from django.conf import settings

from tests.helpers.front_door import wsgi_call

pytestmark = pytest.mark.django_db(transaction=True)


class UnreadableBody(io.RawIOBase):
    """A request body that must not be read."""

    reads = 0

    def read(self, size=-1):
        UnreadableBody.reads += 1
        raise AssertionError("the body was read")

    readline = read


def test_a_body_past_the_limit_is_refused_from_its_content_length_unread():
    UnreadableBody.reads = 0
    answer = wsgi_call(
        path="/admin/fulfillment/order/1/work/",
        CONTENT_TYPE="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(settings.REQUEST_MAX_BYTES + 1),
        **{"wsgi.input": UnreadableBody()},
    )
    assert answer.status_code == 413
    assert UnreadableBody.reads == 0


def test_a_body_within_the_limit_goes_on():
    answer = wsgi_call(b"{}", path="/admin/login/", CONTENT_TYPE="application/x-www-form-urlencoded")
    assert answer.status_code != 413


def test_the_limits_are_set():
    assert settings.REQUEST_MAX_BYTES >= 2 * settings.DOCUMENT_MAX_BYTES
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE and settings.FILE_UPLOAD_MAX_MEMORY_SIZE

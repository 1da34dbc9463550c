"""The error hierarchy: class per status, transient flag, safe excerpt, readable text."""

import pytest
import requests

from partner.core.logging import secret_register
from partner.platform.errors import (
    RequestRefused,
    ResourceOutsideServiceError,
    ServiceAuthenticationError,
    ServiceError,
    ServiceNotFoundError,
    ServiceRateLimitError,
    ServiceUnavailableError,
    ServiceValidationError,
    error_from_response,
    excerpt_of,
    retry_after_parse,
    url_display,
)


def response(status, body=b"", headers=None, url="http://svc.test/sandbox/partner/v2/transactions/t1"):
    r = requests.models.Response()
    r.status_code = status
    r._content = body
    r.headers.update(headers or {})
    r.url = url
    r.encoding = "utf-8"
    return r


@pytest.mark.parametrize(
    ("status", "cls", "transient"),
    [
        (401, ServiceAuthenticationError, False),
        (403, ServiceAuthenticationError, False),
        (404, ServiceNotFoundError, False),
        (400, ServiceValidationError, False),
        (409, ServiceValidationError, False),
        (422, ServiceValidationError, False),
        (429, ServiceRateLimitError, True),
        (500, ServiceUnavailableError, True),
        (503, ServiceUnavailableError, True),
        (302, ServiceError, False),
        (204, ServiceError, False),
    ],
)
def test_status_maps_to_class(status, cls, transient):
    error = error_from_response(response(status), method="GET", what="transaction retrieval")
    assert type(error) is cls
    assert isinstance(error, ServiceError)
    assert error.transient is transient
    assert error.status == status and error.method == "GET"
    assert error.url == "http://svc.test/sandbox/partner/v2/transactions/t1"


def test_validation_error_keeps_the_parsed_body_and_says_it_all():
    error = error_from_response(
        response(400, b'{"message": "loanFormat is wrong", "field": "loanFormat"}'),
        method="PATCH",
        what="response delivery",
    )
    assert error.body == {"message": "loanFormat is wrong", "field": "loanFormat"}
    text = str(error)
    assert "response delivery rejected" in text and "PATCH" in text and "HTTP 400" in text
    assert "loanFormat is wrong" in text


def test_rate_limit_reads_retry_after():
    error = error_from_response(response(429, headers={"Retry-After": "7"}), method="GET")
    assert error.retry_after == 7.0


def test_unavailable_reads_retry_after_too():
    error = error_from_response(response(503, headers={"Retry-After": "9"}), method="PATCH")
    assert error.transient and error.retry_after == 9.0
    assert error_from_response(response(502), method="GET").retry_after is None


def test_excerpt_is_short_single_line_and_redacted():
    secret_register("tok-abcdef-123456")
    body = ('{"access_token": "tok-abcdef-123456", "password": "hunter22", "msg": "' + "x" * 2000 + '"}\n\n').encode()
    error = error_from_response(response(500, body), method="GET")
    assert len(error.excerpt) <= 300
    assert "\n" not in error.excerpt
    assert "tok-abcdef-123456" not in str(error) and "hunter22" not in str(error)


def test_url_in_errors_drops_query_and_user_info():
    assert url_display("https://user:pw@up.example.com:8443/u/1?sig=abc#x") == "https://up.example.com:8443/u/1"
    error = ServiceError("upload failed", method="PUT", url="https://up.example.com/u/1?X-Sig=secretsig")
    assert "secretsig" not in str(error)


def test_retry_after_forms():
    assert retry_after_parse(None) is None
    assert retry_after_parse("") is None
    assert retry_after_parse("3") == 3.0
    assert retry_after_parse("-2") == 0.0
    assert retry_after_parse("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    assert retry_after_parse("soon") is None


def test_transport_errors_chain_their_cause():
    cause = requests.ConnectionError("refused")
    try:
        try:
            raise cause
        except requests.ConnectionError as err:
            raise ServiceUnavailableError("no answer", method="GET", url="http://x/y") from err
    except ServiceUnavailableError as error:
        assert error.__cause__ is cause and error.transient


def test_an_address_outside_the_service_is_refused_before_any_request():
    assert issubclass(ResourceOutsideServiceError, RequestRefused)
    assert not issubclass(ResourceOutsideServiceError, ServiceError)
    assert excerpt_of("") == ""

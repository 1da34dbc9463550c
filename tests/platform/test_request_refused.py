"""Requests we refuse to send are RequestRefused errors: no ServiceError, no status, nothing sent.

A ServiceError says what the service answered; a request that never left has no answer to tell. These
hold the two kinds apart, and show that every caller that handled the refusals as ServiceErrors
still handles them: a bad path id fails the order (and the notification) as a refused call does,
and a delivery whose PATCH could not be sent fails with its reason.
"""

import pytest

from partner.catalog.errors import ProductSyncError
from partner.catalog.services import _service_call
from partner.platform import client
from partner.platform.errors import RequestRefused, ServiceError
from partner.platform.locations import UploadLocationRefusedError, upload_location_check
from partner.platform.types import UploadSlot


def refusals(settings) -> list[RequestRefused]:
    settings.SVC_UPLOAD_LOCATION_STRICT = True
    caught = []
    for call in (
        lambda: client._url("partner", "v2", "transactions", ".."),
        lambda: upload_location_check("ftp://uploads.example.com/r1?X-Signature=s3cr3t"),
        lambda: client.upload_resource(
            UploadSlot(
                id="r1", name="a.pdf", mime_type="application/pdf", location="https://u.example/r1", authorization=""
            ),
            b"%PDF",
        ),
    ):
        with pytest.raises(RequestRefused) as refused:
            call()
        caught.append(refused.value)
    return caught


def test_a_refused_request_is_no_service_error_and_carries_no_status(settings):
    path_id, location, no_authorization = refusals(settings)
    assert isinstance(path_id, client.ServicePathIdError) and isinstance(path_id, ValueError)
    assert isinstance(location, UploadLocationRefusedError)
    for error in (path_id, location, no_authorization):
        assert not isinstance(error, ServiceError)
        assert not hasattr(error, "status") and not error.transient


def test_a_refused_request_names_the_call_as_a_service_error_does(settings):
    path_id, location, no_authorization = refusals(settings)
    assert str(path_id) == "not an id that may be placed in a service path: '..'"
    assert str(location) == "upload location refused: not an http(s) URL — PUT ftp://uploads.example.com/r1"
    assert str(no_authorization) == "upload slot carries no authorization value — PUT https://u.example/r1"
    assert "s3cr3t" not in str(location)


def test_the_catalog_reports_a_refused_request_as_a_failed_product_call(settings):
    def replace():
        return client.replace_product("..", {"id": ".."})

    with pytest.raises(ProductSyncError) as failed:
        _service_call("Pushing the product", replace)
    assert failed.value.message == "Pushing the product failed: not an id that may be placed in a service path: '..'"
    assert isinstance(failed.value.__cause__, client.ServicePathIdError)

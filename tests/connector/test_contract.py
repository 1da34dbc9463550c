"""The API's contract, checked by tools no one here wrote: the OpenAPI document validates
(`openapi-spec-validator`), a client generated from it without a warning (`openapi-python-client`)
gets a token and reads an order, and `schemathesis` calls every /api/v1/ operation with a real token,
valid and invalid requests alike, none answering anything the document does not say.

Bounded in time: a few examples per operation and mode (about 20 s on a quiet machine), and schemathesis's
coverage phase, deterministic, through its own runner (about 30 s)."""

import importlib
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from openapi_spec_validator import validate
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.generation import GenerationMode

pytestmark = pytest.mark.django_db(transaction=True)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
EXAMPLES = 4  # per operation and mode


@pytest.fixture
def document(live_server) -> dict:
    return requests.get(f"{live_server.url}/api/schema/?format=json", timeout=30).json()


@pytest.fixture
def token(live_server, connection) -> str:
    created = connection.created
    answer = requests.post(
        f"{live_server.url}/api/v1/oauth/token",
        data={"grant_type": "client_credentials", "scope": "read answer"},
        auth=(created.client_id, created.client_secret),
        timeout=10,
    )
    return answer.json()["access_token"]


def test_the_document_validates(document):
    validate(document)  # OpenAPI 3.x, by openapi-spec-validator


def test_a_generated_client_authenticates_and_reads_an_order(live_server, document, order, connection, tmp_path):
    import json

    (tmp_path / "openapi.json").write_text(json.dumps(document))
    venv_bin = str(Path(sys.executable).parent)
    run = subprocess.run(
        [f"{venv_bin}/openapi-python-client", "generate", "--path", "openapi.json", "--meta", "none"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}"},  # its post-hook runs ruff
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "Warning" not in output, output
    sys.path.insert(0, str(tmp_path))
    try:
        package = "partner_application_api_client"
        client_module = importlib.import_module(f"{package}.client")
        oauth_token = importlib.import_module(f"{package}.api.api.oauth_token")
        orders_read = importlib.import_module(f"{package}.api.api.orders_read")
        models = importlib.import_module(f"{package}.models")
        import base64

        created = connection.created
        basic = base64.b64encode(f"{created.client_id}:{created.client_secret}".encode()).decode()
        with client_module.AuthenticatedClient(base_url=live_server.url, token=basic, prefix="Basic") as anonymous:
            issued = oauth_token.sync(
                client=anonymous,
                body=models.TokenIn(grant_type=models.GrantTypeEnum.CLIENT_CREDENTIALS, scope="read answer"),
            )
        assert isinstance(issued, models.TokenOut), issued
        with client_module.AuthenticatedClient(base_url=live_server.url, token=issued.access_token) as client:
            read = orders_read.sync(order_id=str(order.pk), client=client)
            assert isinstance(read, models.OrderOut) and read.id == order.pk and read.status.value == "WITH_STAFF"
            missing = orders_read.sync(order_id="999999", client=client)
            assert isinstance(missing, models.Problem) and missing.type_.endswith("/order-not-found")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.startswith("partner_application_api_client")]:
            del sys.modules[name]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_schemathesis_finds_nothing_the_document_does_not_say(live_server, settings_rates, token, order, mode):
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json").include(path_regex="^/api/v1/")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 12
    headers = {"Authorization": f"Bearer {token}"}
    seen: list[tuple[str, int]] = []
    for operation in operations:
        try:
            run_operation(operation, mode, live_server.url, headers, seen, order_id=str(order.pk))
        except Unsatisfiable:  # no invalid input exists for this operation (schemathesis's runner skips it too)
            continue
    print(f"schemathesis {mode.value}: {sorted(Counter(seen).items())}")
    assert len(seen) >= 30
    if mode == GenerationMode.POSITIVE:
        assert sum(status < 400 for _, status in seen) >= 10


@pytest.fixture
def settings_rates(settings):
    settings.RATELIMIT_API = "100000/m"  # the examples come faster than a partner system's calls
    settings.RATELIMIT_API_TOKEN = "100000/m"


def run_operation(operation, mode, base_url, headers, seen, *, order_id):
    # The order's id in the path: the answers reach the order's rules, not only its 404.
    path = {"order_id": order_id} if "{order_id}" in operation.path and mode == GenerationMode.POSITIVE else None

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path))
    def check(case):
        oauth = operation.path in ("/api/v1/oauth/token", "/api/v1/oauth/revoke")  # their own credentials
        sent = case.headers if oauth else {**(case.headers or {}), **headers}
        case.headers = sent
        with requests.Session() as session:
            response = case.call(base_url=base_url, session=session, timeout=30)
        seen.append((operation.path, response.status_code))
        case.validate_response(response, checks=CHECKS)

    check()


def test_schemathesis_coverage_phase_finds_nothing(live_server, settings_rates, token, order, tmp_path):
    """Schemathesis's own runner, its coverage phase: for each operation the boundary values the document
    allows and the nearest it refuses (empty, too long, out of range, wrong type, missing), deterministic."""
    venv_bin = Path(sys.executable).parent
    run = subprocess.run(
        [
            f"{venv_bin}/schemathesis",
            "run",
            f"{live_server.url}/api/schema/?format=json",
            "--include-path-regex",
            "^/api/v1/",
            "--exclude-path",
            "/api/v1/oauth/token",  # its own credentials, not the bearer token (the tests above cover it)
            "--exclude-path",
            "/api/v1/oauth/revoke",  # likewise
            "--phases",
            "coverage",
            "--checks",
            ",".join(check.__name__ for check in CHECKS),
            "--header",
            f"Authorization: Bearer {token}",
            "--max-examples",
            str(EXAMPLES),
            "--generation-deterministic",
            "--workers",
            "1",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # its cache folder (.schemathesis/) there, not in the checkout
        timeout=240,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    cases = re.search(r"(\d+) generated, (\d+) passed", output)  # about 320, 10 operations
    assert cases and cases.group(1) == cases.group(2) and int(cases.group(1)) >= 100, output[-3000:]

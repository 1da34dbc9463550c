"""Idempotent answers keep what replays them (the status and the ids of what was made), never the
order the body carries: the table grows by a few dozen bytes an answer, not with the square of an
order's answers (issue 36, Medium 8)."""

import importlib
import json
import uuid

import pytest

from partner.connector.models import IdempotentAnswer
from partner.fulfillment.models import Delivery
from tests.helpers.connector import PDF, ApiClient

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(live_server, connection, tasks_sent):
    return ApiClient(live_server.url, connection.created.client_id, connection.created.client_secret)


def test_each_answer_keeps_a_small_record_and_replays_the_same_answer(api, order):
    keys = [str(uuid.uuid4()) for _ in range(30)]
    firsts = [
        api.post(f"/orders/{order.pk}/status-updates", key=k, json={"text": f"Step {n}"}) for n, k in enumerate(keys)
    ]
    assert {f.status_code for f in firsts} == {201}
    sizes = [len(json.dumps(body)) for body in IdempotentAnswer.objects.values_list("body", flat=True)]
    assert len(sizes) == 30 and max(sizes) <= 64  # the ids alone, the 30th as small as the first

    # a replay answers the same delivery, rendered from the ids (the order as it stands now)
    again = api.post(f"/orders/{order.pk}/status-updates", key=keys[0], json={"text": "Step 0"})
    assert again.status_code == 201 and again.json()["delivery"] == firsts[0].json()["delivery"]
    assert again.json()["order"]["id"] == order.pk and len(again.json()["order"]["deliveries"]) == 31
    assert Delivery.objects.filter(order=order, kind="status_update").count() == 30

    one = str(uuid.uuid4())
    uploaded = api.post(
        f"/orders/{order.pk}/documents", key=one, files={"file": ("report.pdf", PDF, "application/pdf")}
    )
    replayed = api.post(
        f"/orders/{order.pk}/documents", key=one, files={"file": ("report.pdf", PDF, "application/pdf")}
    )
    assert uploaded.status_code == replayed.status_code == 201 and uploaded.json() == replayed.json()
    acknowledged = [api.post(f"/orders/{order.pk}/acknowledge", key=one + "-ack") for _ in range(2)]
    assert [a.status_code for a in acknowledged] == [200, 200] and acknowledged[0].json()["id"] == order.pk
    assert IdempotentAnswer.objects.get(key=one).body == {"document": uploaded.json()["id"]}


def test_the_answers_kept_so_far_are_cut_to_their_ids():
    migration = importlib.import_module("partner.connector.migrations.0008_idempotent_answer_ids")
    order = {"id": 7, "deliveries": [{"id": 1}] * 50, "request": {"loan": {"x": "y" * 1000}}}
    assert migration.made_of({"order": order, "delivery": {"id": 9, "kind": "final"}}) == {"order": 7, "delivery": 9}
    assert migration.made_of(order) == {"order": 7}
    assert migration.made_of({"id": 3, "name": "a.pdf", "mime_type": "application/pdf"}) == {"document": 3}

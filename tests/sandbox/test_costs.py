"""What a call costs the emulator (docs/performance.md, "What the emulated platform costs"): its CPU is
taken from ours in every benchmark, so its statements per PATCH are held, and a sender thread keeps
its database connection from one notification to the next."""

import threading

from django.db import connections

from partner.sandbox import faults, webhooks
from partner.sandbox.seeding import sandbox_seed
from partner.sandbox.transactions import response_patch, transaction_create
from partner.sandbox.uploads import upload_accept, upload_slots_request
from partner.sandbox.webhooks import webhook_deliveries_wait
from tests.helpers.sandbox import host_transaction


def test_a_patch_with_a_document_takes_eleven_statements(db, django_assert_num_queries):
    """The first PATCH of a response, with an uploaded document: the transaction locked and read,
    its slot checked, the response created, the PATCH kept, the status, the event, the fault rules
    (read at most once a second: here always) and the webhook, in the test's savepoint. Only the
    transaction's row is locked, not its product's, and neither the slot's bytes nor a secret are read."""
    seed = sandbox_seed(public_base_url="http://partner.example")
    product, user, loan = seed.products["appraisal"], seed.users["lender.demo"], seed.loans[2]
    transaction = transaction_create(product=product, user=user, loan=loan, send_webhook=False)
    document = {"name": "r.pdf", "mimeType": "application/pdf"}
    [slot] = upload_slots_request(transaction_id=transaction.id, items=[document])
    upload_accept(slot_id=slot["id"], authorization=slot["authorization"], content_type="application/pdf", content=b"%")
    payload = {
        "status": "REQUEST_COMPLETED",
        "partnerStatus": "Report attached",
        "resources": [{"id": slot["id"], **document}],
    }
    faults.rules_forget()
    with django_assert_num_queries(11) as captured:
        response = response_patch(transaction_id=transaction.id, payload=payload, base_url="http://sandbox.example")
    assert response.patch_count == 1 and response.data["resources"] == payload["resources"]
    statements = [query["sql"] for query in captured.captured_queries]
    [locking] = [sql for sql in statements if "FOR UPDATE" in sql]
    assert locking.endswith('FOR UPDATE OF "sandbox_transaction"')
    assert not any('"sandbox_uploadslot"."content"' in sql for sql in statements)
    assert not any('"credentials_encrypted"' in sql or '"signing_secret"' in sql for sql in statements)


def test_a_sender_thread_keeps_its_database_connection(sandbox, settings, monkeypatch):
    settings.SANDBOX_WEBHOOK_WORKERS = 1
    webhooks.senders_stop()  # the next delivery starts one thread
    opened = []
    wrapper = type(connections["default"])
    connect = wrapper.get_new_connection

    def counted(self, conn_params):
        if threading.current_thread().name.startswith("sandbox-webhook"):
            opened.append(threading.current_thread().name)
        return connect(self, conn_params)

    monkeypatch.setattr(wrapper, "get_new_connection", counted)
    for _ in range(3):
        host_transaction(sandbox)
        assert webhook_deliveries_wait(10)
    assert len(sandbox.receiver.calls) == 3
    assert opened == ["sandbox-webhook-0"]  # one connection for the three notifications
    webhooks.senders_stop()
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("sandbox-webhook")]

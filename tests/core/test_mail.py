"""An e-mail is sent by a task that retries, once the change that wanted it commits: a mail server
that turns it away at first (a real one on a local port, `tests/helpers/smtp.py`) costs retries,
never the message; a change rolled back tells nobody."""

import pytest
from django.db import transaction

from partner.core.mail import MAIL_TASK, mail_send_enqueue
from tests.helpers.smtp import SmtpServer, mail_server_use
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGE = {"subject": "Connection acme disabled", "body": "Replay the failed events.\n", "to": ["ops@x.example"]}


def test_a_message_is_published_only_once_its_transaction_commits(tasks_sent):
    with transaction.atomic():
        mail_send_enqueue(**MESSAGE)
        assert tasks_sent == []
    assert tasks_sent == [(MAIL_TASK, MESSAGE)]

    tasks_sent.clear()
    with pytest.raises(RuntimeError), transaction.atomic():
        mail_send_enqueue(**MESSAGE)
        raise RuntimeError("rolled back")
    assert tasks_sent == []


@pytest.mark.worker
def test_a_message_the_mail_server_turns_away_is_retried_until_sent(settings, celery_worker_live):
    settings.CELERY_TASK_RETRY_BACKOFF = 0.2  # the retry rule's waits, short for the test
    with SmtpServer(refuse=2) as server:
        mail_server_use(settings, server)
        mail_send_enqueue(**MESSAGE)
        wait_for(
            lambda: server.messages,
            timeout=120,  # a wait, not a timing assertion: the worker may start slowly on a busy machine
            message="the message sent",
        )
    assert server.connections == 3  # turned away twice, sent on the third attempt
    [message] = server.messages
    assert message["To"] == "ops@x.example" and message["Subject"] == MESSAGE["subject"]

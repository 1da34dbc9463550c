"""E-mail to people (staff, a connection's contact): sent by a task that retries, after the commit.

Every e-mail of the application goes out through here. `mail_send` sends one message from
DEFAULT_FROM_EMAIL; a mail server's error propagates. It runs in a task, never in the caller's
request or transaction, and a failure there is retried by the project's one retry rule
(`mail_task_run`, `partner.core.retries`): a mail server that is away, or that turns the message
away for now, costs a retry, never the message, and never fails the work that wanted it sent.

- A message whose text is known when it is wanted: `mail_send_enqueue` has the task `core.mail_send`
  send it once the caller's transaction commits (a rolled-back change tells nobody).
- A message that must be written when it is sent and marked sent only once it is (the
  fulfillment's notices of an order, `partner.fulfillment.staff.notices`): the app's own task calls
  its service through `mail_task_run`, and that service sends with `mail_send`.

What a message says is its sender's rule: the callers keep borrowers' data out of it.
"""

from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.mail import send_mail

from partner.core.enqueue import enqueue_after_commit
from partner.core.retries import task_retry

MAIL_TASK = "core.mail_send"

T = TypeVar("T")


def mail_send(*, subject: str, body: str, to: list[str]) -> None:
    """Send one message now (in a task); the mail server's error propagates."""
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, list(to))


def mail_send_enqueue(*, subject: str, body: str, to: list[str]) -> None:
    """Have a worker send one message once the caller's transaction commits, retried when it fails."""
    enqueue_after_commit(MAIL_TASK, subject=subject, body=body, to=list(to))


def mail_task_run(task, send: Callable[[], T]) -> T:
    """Run `send` (a service that sends e-mail) in the bound task `task`: any error schedules the task
    again by the retry rule (smtplib, sockets and each backend raise errors of their own, with no
    common type); once its retries are spent, the task fails with that error."""
    try:
        return send()
    except Exception as exc:
        raise task_retry(task, exc) from exc

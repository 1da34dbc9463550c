"""Diagnostic task: proves a worker consumes from the broker (`manage.py check_worker`)."""

import socket

from celery import shared_task
from django.utils import timezone


@shared_task(name="core.worker_ping", ignore_result=False)
def worker_ping(token: str) -> dict:
    return {"token": token, "worker": socket.gethostname(), "at": timezone.now().isoformat()}

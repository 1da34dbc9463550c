"""Send a ping task through the broker and wait for a worker to answer it."""

import uuid

from django.core.management.base import BaseCommand, CommandError

from partner.core.tasks import worker_ping


class Command(BaseCommand):
    help = "Check that a Celery worker consumes tasks from the configured broker."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=30.0)

    def handle(self, *args, timeout, **options):
        token = uuid.uuid4().hex
        try:
            answer = worker_ping.delay(token).get(timeout=timeout)
        except Exception as exc:
            raise CommandError(f"no worker answered within {timeout:g}s ({type(exc).__name__})") from None
        if answer.get("token") != token:
            raise CommandError("a worker answered with someone else's ping")
        self.stdout.write(f"worker {answer['worker']} answered at {answer['at']}")

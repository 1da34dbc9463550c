"""Run the inbox relay (and the lease hand-backs) in the foreground, apart from any worker (stopped by
Ctrl-C or SIGTERM)."""

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from partner.core.housekeeping import housekeeping_loop
from partner.inbox.relay import relay_chore


class Command(BaseCommand):
    help = (
        "Hand stored webhook notifications to the broker, as the relay inside each Celery worker does. "
        "For deployments that run it as a process of its own (set INBOX_RELAY_INTERVAL=0 on the workers)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="Seconds to wait when nothing was waiting (default: INBOX_RELAY_INTERVAL, at least 0.05).",
        )

    def handle(self, *args, interval, **options):
        interval = max(interval if interval is not None else settings.INBOX_RELAY_INTERVAL, 0.05)
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        self.stdout.write(f"inbox relay: every {interval:g}s when idle (Ctrl-C to stop)")
        housekeeping_loop(stop, chores=[relay_chore(interval=interval)])

"""Purge what is past retention now (the daily task's work), or say what that would do (--dry-run)."""

from django.core.management.base import BaseCommand, CommandError

from partner.core.retention import DELETE, ERASE, PurgeOutcome, purge_plan, purge_run


def _line(outcome: PurgeOutcome, *, dry_run: bool) -> str:
    if outcome.cutoff is None:
        return f"{outcome.kind}: kept for ever ({outcome.setting}=0)"
    verb = {ERASE: ("erased", "would erase"), DELETE: ("deleted", "would delete")}[outcome.action][dry_run]
    line = (
        f"{outcome.kind}: {verb} {outcome.rows} (cut-off {outcome.cutoff:%Y-%m-%d %H:%M:%S %Z}; "
        f"{outcome.setting}={outcome.days} days)"
    )
    return f"{line}; FAILED ({outcome.error}), the rest waits for the next run" if outcome.error else line


class Command(BaseCommand):
    help = (
        "Erase or delete the personal data past its retention (RETENTION_* settings), as the daily task does; "
        "never anything of an open order. --dry-run says per kind how many rows it would erase or delete."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what is past retention; change nothing")

    def handle(self, *args, dry_run, **options):
        outcomes = purge_plan() if dry_run else purge_run()
        for outcome in outcomes:
            self.stdout.write(_line(outcome, dry_run=dry_run))
        if dry_run:
            self.stdout.write("Dry run: nothing was changed.")
        failed = [outcome.kind for outcome in outcomes if outcome.error]
        if failed:
            raise CommandError(f"the purge of {', '.join(failed)} failed; what it did before stays done")

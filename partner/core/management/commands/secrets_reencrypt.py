"""Rewrite every stored secret with the newest FIELD_ENCRYPTION_KEYS key, so older keys can be removed."""

from django.core.management.base import BaseCommand, CommandError

from partner.core.encryption import secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored secret with the first key of FIELD_ENCRYPTION_KEYS. Rotation: put the "
        "new key first, deploy, run this, then remove the old key. Fails when a value no key decrypts remains."
    )

    def handle(self, *args, **options):
        result = secrets_reencrypt()
        self.stdout.write(f"{result.rewritten} secret(s) re-encrypted with the newest key.")
        if result.undecryptable:
            raise CommandError(
                f"{len(result.undecryptable)} secret(s) cannot be decrypted with any configured key: "
                + ", ".join(result.undecryptable)
                + ". Keep the old keys until these are set again or removed."
            )

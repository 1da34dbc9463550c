"""Secrets at rest: Fernet encryption with keys from FIELD_ENCRYPTION_KEYS.

Several keys allow rotation: the first encrypts, any of them decrypts, and
`manage.py secrets_reencrypt` rewrites every stored value with the first, after
which an old key can be removed. `decrypt` raises `DecryptionError` for a value
no key decrypts. A field loaded from the database never raises: such a value is
an `Undecryptable`, empty to the code that reads it (never the ciphertext as if
it were the secret), flagged to staff, and saved back unchanged, so one bad row
cannot break every request that reads its table, and re-adding the lost key
brings it back.
"""

import logging
from dataclasses import dataclass, field
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models, transaction
from django.db.models import ExpressionWrapper, F, Value

logger = logging.getLogger(__name__)


class DecryptionError(Exception):
    """A stored secret could not be decrypted with any configured key."""


class Undecryptable(str):
    """A stored secret no configured key decrypts: "" to Python code, its ciphertext kept for saving."""

    ciphertext: str

    def __new__(cls, ciphertext: str):
        value = super().__new__(cls, "")
        value.ciphertext = ciphertext
        return value


def keys_malformed(keys) -> list[int]:
    """The positions (from 1) of the values of FIELD_ENCRYPTION_KEYS that are not Fernet keys."""
    malformed = []
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key)
        except (ValueError, TypeError):
            malformed.append(position)
    return malformed


def keys_usable() -> bool:
    """Whether the configured keys can encrypt and decrypt (readiness: without them every webhook fails)."""
    return bool(settings.FIELD_ENCRYPTION_KEYS) and not keys_malformed(settings.FIELD_ENCRYPTION_KEYS)


@cache
def _fernet(keys):
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except (ValueError, TypeError):
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS holds a value that is not a Fernet key") from None


def _current():
    return _fernet(tuple(settings.FIELD_ENCRYPTION_KEYS))


def encrypt(plaintext: str) -> str:
    return _current().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError("a stored secret could not be decrypted with FIELD_ENCRYPTION_KEYS") from None


def rotate(token: str) -> str:
    """Re-encrypt with the first key (after adding a new key in front)."""
    return _current().rotate(token.encode()).decode()


class EncryptedTextField(models.TextField):
    """A text column stored encrypted; Python code sees the plaintext ('' when empty)."""

    def from_db_value(self, value, expression, connection):
        if value in (None, ""):
            return ""
        try:
            return decrypt(value)
        except DecryptionError:
            logger.warning("%s: a stored secret cannot be decrypted with FIELD_ENCRYPTION_KEYS", self.model._meta.label)
            return Undecryptable(value)

    def get_prep_value(self, value):
        if isinstance(value, Undecryptable):
            return value.ciphertext  # unchanged: the key that decrypts it may come back
        value = super().get_prep_value(value)
        if value in (None, ""):
            return ""
        return encrypt(value)


@dataclass
class Reencryption:
    """What `secrets_reencrypt` did: values rewritten with the newest key, and those no key decrypts."""

    rewritten: int = 0
    undecryptable: list[str] = field(default_factory=list)  # "app.Model.field #pk", never a value


def _encrypted_fields():
    for model in apps.get_models():
        for model_field in model._meta.concrete_fields:
            if isinstance(model_field, EncryptedTextField):
                yield model, model_field


def secrets_reencrypt() -> Reencryption:
    """Rewrite every stored secret with the first of FIELD_ENCRYPTION_KEYS (after a new key was put
    in front), so that the older keys can be removed. Values no key decrypts are left as they are
    and listed. Safe to run again: a value already under the first key is rewritten the same way."""
    result = Reencryption()
    for model, model_field in _encrypted_fields():
        # The stored text as it is, without the field's decryption.
        stored = ExpressionWrapper(F(model_field.name), output_field=models.TextField())
        rows = model._default_manager.exclude(**{model_field.name: ""}).annotate(_stored=stored)
        for pk, ciphertext in rows.values_list("pk", "_stored").iterator():
            try:
                rotated = rotate(ciphertext)
            except InvalidToken:
                result.undecryptable.append(f"{model._meta.label}.{model_field.name} #{pk}")
                continue
            with transaction.atomic():
                model._default_manager.filter(pk=pk).update(
                    **{model_field.name: Value(rotated, output_field=models.TextField())}
                )
            result.rewritten += 1
    return result

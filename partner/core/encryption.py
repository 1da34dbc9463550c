"""Secrets at rest: Fernet encryption with keys from FIELD_ENCRYPTION_KEYS.

Several keys allow rotation: the first encrypts, any of them decrypts. A value
that no key decrypts raises `DecryptionError`; ciphertext is never handed back
as if it were the secret.
"""

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models


class DecryptionError(Exception):
    """A stored secret could not be decrypted with any configured key."""


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
        return decrypt(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value in (None, ""):
            return ""
        return encrypt(value)

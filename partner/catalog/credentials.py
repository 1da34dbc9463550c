"""The one credential check, used by the origin proxy (UI) and by the fulfillment pipeline.

The host hands us the credential values a lender configured for our product
(origin `credentials`, transaction `request.credentials`). They are checked
in two steps:

1. against the product's credential definitions: required, minimum/maximum
   length, pattern, and no value for an unknown property;
2. against our partner accounts: the user-scope values name an account
   (the non-secret one is the username, the secret one its password, checked
   with Django's hashers); the company-scope values must equal what the
   account's company expects.

Messages and errors name the credential property and the rule, never a value:
a value may be secret, and even a wrong username is not echoed.
"""

import hmac
import logging
import re
import threading
from dataclasses import dataclass, field

from django.contrib.auth.hashers import make_password
from django.core.cache import cache
from django.utils import timezone
from django.utils.crypto import salted_hmac

from partner.core.logging import secret_register

from .models import CredentialDefinition, PartnerAccount, Product
from .selectors import partner_account_get

logger = logging.getLogger(__name__)

_USERNAME_IDS = ("username", "user", "login", "userid", "user_id", "userName")
_PASSWORD_IDS = ("password", "passwd", "secret")


# The check's message when the lender sent none of the credentials the product requires: not a wrong
# value but a missing setup, which the lender's panel explains on its own.
NO_CREDENTIALS = "No credentials are configured for this product."
# One wording for people: "user name" (the demo product's credential title says "User name" too).
NOT_VALID = "The user name or password is not valid."


@dataclass(frozen=True)
class CredentialCheck:
    ok: bool
    account: PartnerAccount | None
    message: str
    errors: list[dict] = field(default_factory=list)

    @property
    def missing(self) -> bool:
        """Refused because no credentials were sent at all (not because a value is wrong)."""
        return not self.ok and self.message == NO_CREDENTIALS


def _error(definition_key: str, code: str, message: str) -> dict:
    return {"field": definition_key, "code": code, "message": message}


def _label(definition: CredentialDefinition) -> str:
    return definition.title or definition.key


def _rule_errors(definition: CredentialDefinition, value) -> list[dict]:
    label = _label(definition)
    if value is None or value == "":
        if definition.required:
            return [_error(definition.key, "required", f"{label} is required.")]
        return []
    if not isinstance(value, str):
        return [_error(definition.key, "type", f"{label} must be text.")]
    problems = []
    if definition.minimum is not None and len(value) < definition.minimum:
        problems.append(
            _error(definition.key, "min_length", f"{label} must be at least {definition.minimum} characters.")
        )
    if definition.maximum is not None and len(value) > definition.maximum:
        problems.append(
            _error(definition.key, "max_length", f"{label} must be at most {definition.maximum} characters.")
        )
    if definition.pattern:
        try:
            matches = re.fullmatch(definition.pattern, value) is not None
        except re.error:
            matches = False
            logger.warning("catalog: credential %s has an invalid pattern", definition.key)
        if not matches:
            problems.append(_error(definition.key, "pattern", f"{label} does not have the expected format."))
    return problems


def _pick(definitions: list[CredentialDefinition], *, secret: bool, preferred: tuple[str, ...]):
    """The user-scope definition that plays the username (secret=False) or password (secret=True)."""
    candidates = [d for d in definitions if d.scope == CredentialDefinition.Scope.USER and d.secret == secret]
    for definition in candidates:
        if definition.key.lower() in {p.lower() for p in preferred}:
            return definition
    return candidates[0] if candidates else None


# A hash to check against when the username is unknown, so that the answer
# takes as long as for a known user with a wrong password.
_DUMMY_HASH = None


def _dummy_check(password: str) -> None:
    global _DUMMY_HASH
    if _DUMMY_HASH is None:
        _DUMMY_HASH = make_password("not-a-partner-account-password")
    from django.contrib.auth.hashers import check_password

    check_password(password, _DUMMY_HASH)


def _company_errors(definitions: list, credentials: dict, account: PartnerAccount | None) -> list[dict]:
    """The company-scope values that do not equal what the account's company expects."""
    errors = []
    for definition in definitions:
        if definition.scope != CredentialDefinition.Scope.COMPANY:
            continue
        value = credentials.get(definition.key)
        if value in (None, ""):
            continue  # absent optional value (required ones were caught before)
        company = account.company if account is not None else None
        expected = company.credential_value(definition.key, secret=definition.secret) if company else None
        if expected is None or not hmac.compare_digest(str(expected).encode(), value.encode()):
            errors.append(
                _error(definition.key, "company_mismatch", f"{_label(definition)} does not match your company.")
            )
    return errors


def credentials_check(*, product: Product, credentials: dict | None) -> CredentialCheck:
    """Check the credential values a lender configured against the product and our accounts."""
    credentials = credentials if isinstance(credentials, dict) else {}
    definitions = list(product.credential_definitions.all())
    by_key = {d.key: d for d in definitions}
    for definition in definitions:
        if definition.secret and isinstance(credentials.get(definition.key), str):
            secret_register(credentials[definition.key])

    if not definitions and not credentials:
        return CredentialCheck(True, None, "The product asks for no credentials.")
    if not credentials and any(d.required for d in definitions):
        errors = [_error(d.key, "required", f"{_label(d)} is required.") for d in definitions if d.required]
        return CredentialCheck(False, None, NO_CREDENTIALS, errors)

    errors = [
        _error(str(key), "unknown", f"{key} is not a credential of this product.")
        for key in credentials
        if key not in by_key
    ]
    for definition in definitions:
        errors += _rule_errors(definition, credentials.get(definition.key))
    if errors:
        return CredentialCheck(False, None, "The credentials do not meet the product's rules.", errors)

    username_def = _pick(definitions, secret=False, preferred=_USERNAME_IDS)
    password_def = _pick(definitions, secret=True, preferred=_PASSWORD_IDS)
    account = None
    if username_def is not None:
        username = credentials.get(username_def.key) or ""
        password = credentials.get(password_def.key) or "" if password_def else ""
        account = partner_account_get(username=username)
        if account is None:
            _dummy_check(password)
            return _refused(product, "unknown_account", username_def, password_def)
        if password_def is not None and not _password_accepted(account, password):
            return _refused(product, "wrong_password", username_def, password_def)
        if not account.active:
            return CredentialCheck(
                False,
                None,
                "This account is disabled.",
                [_error(username_def.key, "inactive", "The account is disabled.")],
            )

    company_errors = _company_errors(definitions, credentials, account)
    if company_errors:
        return CredentialCheck(False, None, "The company credentials are not valid.", company_errors)

    if account is not None and _check_worth_recording(account):
        PartnerAccount.objects.filter(pk=account.pk).update(last_checked_at=timezone.now())
    return CredentialCheck(True, account, "The credentials are valid.")


# When the credentials last passed is shown to staff to the minute; an account ordering many times a
# minute records it once a minute, not with every order.
LAST_CHECKED_EVERY_SECONDS = 60


def _check_worth_recording(account: PartnerAccount) -> bool:
    last = account.last_checked_at
    return last is None or (timezone.now() - last).total_seconds() >= LAST_CHECKED_EVERY_SECONDS


# The slow password hash is the dearest step of the check, and the same lender's values
# come back with every order and every page poll. A password accepted is remembered
# briefly under a keyed hash of the account, its stored hash and the password (never the
# value itself): a changed password misses at once, a refusal is never remembered, and
# the disabled-account and company checks above and below still run every time.
PASSWORD_ACCEPTED_SECONDS = 120


# A worker runs many orders at once in threads (docs/performance.md): a batch of one lender's
# orders arrives together, and every thread would miss the cache and hash the same password. The
# threads of a process checking the same values wait for the first one's answer instead.
_checking: dict[str, threading.Lock] = {}
_checking_guard = threading.Lock()


def _password_accepted(account: PartnerAccount, password: str) -> bool:
    payload = f"{account.pk}\x00{account.password}\x00{password}"
    digest = salted_hmac("partner.catalog.password", payload, algorithm="sha256").hexdigest()
    key = f"catalog:password-accepted:{digest}"
    if cache.get(key):
        return True
    with _checking_guard:
        lock = _checking.setdefault(key, threading.Lock())
    try:
        with lock:
            if cache.get(key):  # another thread of this process has just accepted it
                return True
            if not account.check_password(password):
                return False
            cache.set(key, True, PASSWORD_ACCEPTED_SECONDS)
            return True
    finally:
        with _checking_guard:
            if not lock.locked():
                _checking.pop(key, None)


def _refused(product, code, username_def, password_def) -> CredentialCheck:
    # One message for an unknown user and a wrong password: no account enumeration.
    logger.info("catalog: credentials refused for product %s (%s)", product.name, code)
    fields = [d.key for d in (username_def, password_def) if d is not None]
    errors = [_error(key, "invalid", NOT_VALID) for key in fields]
    return CredentialCheck(False, None, NOT_VALID, errors)

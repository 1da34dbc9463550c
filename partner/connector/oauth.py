"""The token endpoint's request validator and the hash its client secrets are kept under, both
plugged into django-oauth-toolkit through its own hooks (`OAUTH2_VALIDATOR_CLASS`,
`CLIENT_SECRET_HASHER`).

- A client id that no client of ours can have (a NUL byte or another control character: our ids
  are the toolkit's letters and digits) is refused before any lookup: PostgreSQL refuses NUL in
  text, and the endpoint answered 500 where the client is simply unknown.
- Client secrets are kept as a keyed HMAC-SHA256 (`ClientSecretHasher`), not the password hasher
  (PBKDF2, a million iterations, ~0.3 s of CPU a token request). A password hasher is slow to make
  guessing a person's weak password costly; a client secret is 128 random characters made by the
  toolkit (about 760 bits), which no number of fast guesses reaches, so the slowness bought
  nothing but a way to spend our CPU, and the gap between a known client id (0.3 s) and an
  unknown one (4 ms) told which ids exist. The key (DJANGO_SECRET_KEY, through Django's
  `salted_hmac`) means a copy of the database alone does not let anyone test a guess.
- Equal work whatever the client id: an unknown id has the secret it was sent checked against a
  stand-in, as a known id's is, so the answer's time does not tell which ids exist.
- A secret kept under another hash (PBKDF2, before this one, or under a DJANGO_SECRET_KEY since
  rotated into DJANGO_SECRET_KEY_FALLBACKS) is kept again under the current key the first time the
  client authenticates.
"""

from django.conf import settings
from django.contrib.auth.hashers import BasePasswordHasher, identify_hasher, make_password
from django.utils.crypto import constant_time_compare, salted_hmac
from oauth2_provider.oauth2_validators import OAuth2Validator

KEY_SALT = "partner.connector.oauth.client-secret"


class ClientSecretHasher(BasePasswordHasher):
    """`client_hmac_sha256$<salt>$<hex>`: HMAC-SHA256 of the salt and secret under DJANGO_SECRET_KEY
    (its fallbacks verify too). For machine secrets of the toolkit's length only: never a person's
    password (it is last in PASSWORD_HASHERS, so no password is ever made with it)."""

    algorithm = "client_hmac_sha256"

    def _digest(self, password: str, salt: str, key: str) -> str:
        return salted_hmac(KEY_SALT, f"{salt}${password}", secret=key, algorithm="sha256").hexdigest()

    def encode(self, password, salt):
        self._check_encode_args(password, salt)
        return f"{self.algorithm}${salt}${self._digest(password, salt, settings.SECRET_KEY)}"

    def decode(self, encoded):
        algorithm, salt, digest = encoded.split("$", 2)
        assert algorithm == self.algorithm
        return {"algorithm": algorithm, "hash": digest, "salt": salt}

    def verify(self, password, encoded) -> bool:
        return self.verify_under(password, encoded) is not None

    def verify_under(self, password: str, encoded: str) -> str | None:
        """The key (the current one, or a fallback) `encoded` was made with, when `password` matches it.
        Every key is tried whatever matched, so the time does not tell which."""
        decoded = self.decode(encoded)
        matched = None
        for key in [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]:
            if constant_time_compare(self._digest(password, decoded["salt"], key), decoded["hash"]):
                matched = matched or key
        return matched

    def safe_summary(self, encoded):
        decoded = self.decode(encoded)
        return {"algorithm": decoded["algorithm"], "salt": decoded["salt"][:4] + "…", "hash": "…"}

    def must_update(self, encoded):
        return False

    def harden_runtime(self, password, encoded):
        pass


# What an unknown client id's secret is checked against: no secret matches it.
_STAND_IN = f"{ClientSecretHasher.algorithm}$stand-in${'0' * 64}"


def client_id_possible(client_id) -> bool:
    """A printable value without control characters, as every client id the toolkit generates is."""
    return isinstance(client_id, str) and client_id.isprintable()


class ClientCredentialsValidator(OAuth2Validator):
    def _load_application(self, client_id, request):
        if not client_id_possible(client_id):
            return None  # the toolkit answers invalid_client, as for any unknown id
        return super()._load_application(client_id, request)

    def authenticate_client(self, request, *args, **kwargs):
        authenticated = super().authenticate_client(request, *args, **kwargs)
        if not authenticated and not getattr(request, "client", None):
            # Equal work: an unknown id's secret is checked against a stand-in, as a known one's is.
            ClientSecretHasher().verify(_sent_secret(request), _STAND_IN)
        return authenticated

    def _check_secret(self, provided_secret, stored_secret):
        if not stored_secret.startswith(ClientSecretHasher.algorithm + "$"):
            matched = super()._check_secret(provided_secret, stored_secret)
            current = False
        else:
            key = ClientSecretHasher().verify_under(provided_secret, stored_secret)
            matched, current = key is not None, key == settings.SECRET_KEY
        if matched and not current:
            _client_secret_rehash(stored_secret, provided_secret)
        return matched


def _sent_secret(request) -> str:
    """The client secret the token request carries (HTTP Basic, or the body), or an empty one."""
    import base64
    import binascii
    from urllib.parse import unquote_plus

    auth = request.headers.get("HTTP_AUTHORIZATION", "") if getattr(request, "headers", None) else ""
    kind, _, value = auth.partition(" ")
    if kind == "Basic":
        try:
            return unquote_plus(base64.b64decode(value).decode("utf-8", "replace").partition(":")[2])
        except (binascii.Error, ValueError):
            return ""
    return str(getattr(request, "client_secret", "") or "")


def _client_secret_rehash(stored: str, secret: str) -> None:
    """Keep the client's secret under the current hash and key (it matched `stored`)."""
    from oauth2_provider.models import get_application_model

    try:
        identify_hasher(stored)
    except ValueError:
        return  # kept in clear (hash_client_secret off): the toolkit's choice, not changed here
    Application = get_application_model()
    Application.objects.filter(client_secret=stored).update(
        client_secret=make_password(secret, hasher=ClientSecretHasher.algorithm)
    )

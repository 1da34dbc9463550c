"""The token endpoint's request validator: django-oauth-toolkit's, refusing before any lookup a client
id that no client of ours can have.

Our client ids are the toolkit's (letters and digits). One holding a NUL byte or another control
character would reach the database as a lookup key, and PostgreSQL refuses NUL in text: the token
endpoint answered 500 where the client is simply unknown (found by schemathesis's coverage phase).
"""

from oauth2_provider.oauth2_validators import OAuth2Validator


def client_id_possible(client_id) -> bool:
    """A printable value without control characters, as every client id the toolkit generates is."""
    return isinstance(client_id, str) and client_id.isprintable()


class ClientCredentialsValidator(OAuth2Validator):
    def _load_application(self, client_id, request):
        if not client_id_possible(client_id):
            return None  # the toolkit answers invalid_client, as for any unknown id
        return super()._load_application(client_id, request)

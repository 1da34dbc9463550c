"""The REST framework and the OpenAPI schema of both APIs."""

from .connector import OAUTH2_PROVIDER

# REST FRAMEWORK
# ------------------------------------------------------------------------------
# https://www.django-rest-framework.org/api-guide/settings/
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "partner.core.api.exception_handler",
}
# https://drf-spectacular.readthedocs.io/en/latest/settings.html
SPECTACULAR_SETTINGS = {
    "TITLE": "Partner application API",
    "DESCRIPTION": "The partner application's API: under /api/v1/ the connector's, which a partner's own order "
    "system calls (OAuth 2.0 client credentials, docs/connecting.md); under /v1/ the platform's webhook "
    "receiver, and the origin proxy and transaction status the embedded panel reads.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The connector's API: OAuth 2.0 client credentials at its token endpoint (docs/connecting.md).
    "OAUTH2_FLOWS": ["clientCredentials"],
    "OAUTH2_TOKEN_URL": "/api/v1/oauth/token",
    "OAUTH2_SCOPES": OAUTH2_PROVIDER["SCOPES"],
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "clientBasic": {
                "type": "http",
                "scheme": "basic",
                "description": "The token endpoint's client authentication: client id and secret.",
            }
        }
    },
}

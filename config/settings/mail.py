"""E-mail to staff: the backend from EMAIL_URL, and the sender."""

from .environment import env, env_read

# EMAIL
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#email-backend
# https://django-environ.readthedocs.io/en/latest/types.html#environ-env-email-url
# Staff are told of a new staff-worked order and of one past its due time. EMAIL_URL as
# django-environ reads it (smtp+tls://user:password@host:587); the console by default.
# An empty EMAIL_URL is the console too; `check --deploy` fails on it (partner.E014).
_CONSOLE_MAIL = "consolemail://"
vars().update(
    env_read(
        "EMAIL_URL",
        lambda name: env.email_url_config(env.str(name, default="") or _CONSOLE_MAIL),
        env.email_url_config(_CONSOLE_MAIL),
    )
)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="orders@partner.example")

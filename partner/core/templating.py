"""The Jinja2 environment of our pages drawn with Jinja2 (the `jinja2` engine of TEMPLATES): the few of
Django's template language's tags and filters they use, as Django draws them.

`url(name, *args)` is Django's `reverse`; `strftime` writes a time in the current time zone with
Python's strftime; `filesizeformat` and `truncatechars` are Django's own filters, which Jinja2 has under
the same names with other output. Django's Jinja2 backend gives every template `request`, `csrf_input`
and `csrf_token`.
"""

from django.template import defaultfilters
from django.urls import reverse
from django.utils.timezone import template_localtime
from jinja2 import Environment


def url(name: str, *args) -> str:
    return reverse(name, args=args)


def strftime(value, fmt: str) -> str:
    """A time in the current time zone (as the template language shows times) written with Python's
    strftime ("%Y-%m-%d %H:%M"); "" for none. Our pages write times as numbers, which strftime writes
    as the template language's `date` filter does ("Y-m-d H:i") in a fifth of its CPU: about 30 µs a
    time, twenty times on an order's page (docs/performance.md, "The web side, sixth round")."""
    if value is None:
        return ""
    return template_localtime(value).strftime(fmt)


def environment(**options) -> Environment:
    env = Environment(autoescape=options.pop("autoescape", True), **options)  # Django's backend sets it on
    env.globals["url"] = url
    env.filters.update(
        {
            "strftime": strftime,
            "filesizeformat": defaultfilters.filesizeformat,
            "truncatechars": defaultfilters.truncatechars,
        }
    )
    return env

"""The Jinja2 environment of our pages drawn with Jinja2 (the `jinja2` engine of TEMPLATES): the few of
Django's template language's tags and filters they use, as Django draws them.

`url(name, *args)` is Django's `reverse`; `date` formats a time in the current time zone with Django's
format characters (the template language's `date` filter); `filesizeformat` and `truncatechars` are
Django's own filters, which Jinja2 has under the same names with other output. Django's Jinja2 backend
gives every template `request`, `csrf_input` and `csrf_token`.
"""

from django.template import defaultfilters
from django.urls import reverse
from django.utils.timezone import template_localtime
from jinja2 import Environment


def url(name: str, *args) -> str:
    return reverse(name, args=args)


def date(value, fmt: str) -> str:
    return defaultfilters.date(template_localtime(value), fmt)


def environment(**options) -> Environment:
    env = Environment(autoescape=options.pop("autoescape", True), **options)  # Django's backend sets it on
    env.globals["url"] = url
    env.filters.update(
        {
            "date": date,
            "filesizeformat": defaultfilters.filesizeformat,
            "truncatechars": defaultfilters.truncatechars,
        }
    )
    return env

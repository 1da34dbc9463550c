"""Which pages the host may frame: only views wrapped with `embeddable`.

The decorator sends CSP `frame-ancestors` with the origins of HOST_ORIGINS and
drops X-Frame-Options (which would block the host and cannot list origins).
Every other page keeps Django's `X-Frame-Options: DENY`.
"""

from functools import wraps

from django.conf import settings


def frame_ancestors_header():
    origins = " ".join(["'self'", *settings.HOST_ORIGINS])
    return f"frame-ancestors {origins}"


def embeddable(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response.xframe_options_exempt = True
        existing = response.get("Content-Security-Policy")
        policy = frame_ancestors_header()
        response["Content-Security-Policy"] = f"{existing}; {policy}" if existing else policy
        return response

    return wrapper

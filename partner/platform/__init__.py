"""Everything that talks to the service: token cache, one function per endpoint,
pagination, upload, webhook signatures, URNs and media types.

This package imports no domain app of ours, so workers, views, the shell and
the sandbox can all use it.
"""

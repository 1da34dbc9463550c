"""Everything that talks to the service: token cache, one function per endpoint,
pagination, upload, webhook signatures, URNs and media types.

- client.py: the endpoints #1–#10 (get_origin, get_transaction, patch_response,
  request_upload_slots, upload_resource, get_event, list_/iter_transactions,
  list_/iter_products, replace_product, patch_product) and resource_ref_parse.
- tokens.py: the OAuth 2.0 client-credentials token, shared through Django's cache.
- http.py: pooled per-process sessions, timeouts, retries, redirects refused.
- errors.py, types.py, signals.py: what calls raise, return and report.
- signatures.py, urns.py, formats.py: webhook signatures, URNs, media types and rules.

This package imports no domain app of ours, so workers, views, the shell and
the sandbox can all use it.
"""

"""An emulator of the service (the spec's platform), mounted at /sandbox/ when SANDBOX_ENABLED.

It follows ../shared/spec/platform-interface.md, not our client. Where the spec
leaves a choice open, the sandbox decides as follows:

- Errors: every refusal is JSON `{"error": <code>, "message": <text>, "problems":
  [{"field", "message"}]}`; 400 malformed input, 401 bearer/origin/upload
  authorization, 403 entitlements (access, response loan fields, action), 404
  unknown ids, 409 resources not from a slot request of the transaction or not
  uploaded / a slot uploaded twice / a product name taken, 411 chunked upload,
  413 upload too large, 415 wrong Content-Type, 429/5xx injected faults
  (with Retry-After).
- Data entitlements: `entitlements.data.origin`, `...transaction[].request` and
  `...transaction[].response` may carry `fields` (top-level loan field names); the
  origin's and the request's loan are filtered by them and a response `loan`
  with other fields is refused (403).
- Processing: a response PATCH is processed (an event of type
  `...:response:processed` and its `...:transaction:event` / `created` webhook)
  when it sets status `completed`, carries an action `result`, or adds
  `resources` to a completed response. `resources` accumulate over PATCHes;
  every other member is merged as RFC 7396.
- Origins: refreshOrigin issues a new id and token for the same context; both
  are valid 300 s from generation.
- Settings: the SANDBOX_* ones of config/settings/sandbox.py,
  each documented in .env.example. Installed only where SANDBOX_ENABLED (local runs and
  tests; production only when its process environment asks); no other app imports it.
"""

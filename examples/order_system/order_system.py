"""A partner's order system, as small as it gets: told of orders by signed events, it answers them
through the partner application's API. Standard library only; read it top to bottom.

Run it beside `make run` (which makes the demo appraisal a connected product, worked by this system):

    python examples/order_system/order_system.py

then order the appraisal on the sandbox's host page. For each `order.created` it acknowledges the
order, posts a status update, uploads a PDF and makes the final delivery with it and the loan
fields the product's delivery form (read from the API) describes. Settings, from the
environment (the defaults are the local demo's public values, `manage.py connection_demo`):

    PARTNER_API      http://127.0.0.1:8000/api/v1
    CLIENT_ID        demo-order-system
    CLIENT_SECRET    demo-order-system-secret-1
    SIGNING_SECRET   whsec_ZGVtby1vcmRlci1zeXN0ZW0tc2lnbmluZy1zZWNyZXQ=
    PORT             8001    (the connection's endpoint is http://127.0.0.1:PORT/events)
"""

import base64
import hashlib
import hmac
import json
import os
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API = os.environ.get("PARTNER_API", "http://127.0.0.1:8000/api/v1")
CLIENT_ID = os.environ.get("CLIENT_ID", "demo-order-system")
CLIENT_SECRET = os.environ.get("CLIENT_SECRET", "demo-order-system-secret-1")
SIGNING_SECRET = os.environ.get("SIGNING_SECRET", "whsec_ZGVtby1vcmRlci1zeXN0ZW0tc2lnbmluZy1zZWNyZXQ=")
PORT = int(os.environ.get("PORT", "8001"))
if not API.startswith(("http://", "https://")):
    raise SystemExit("PARTNER_API must be an http:// or https:// address")
TOLERANCE = 300  # seconds: older or newer timestamps are refused (a replayed message)

seen_ids: set[str] = set()  # webhook-ids already handled: events arrive at least once


# 1. Verify an event (Standard Webhooks: HMAC-SHA256 over "id.timestamp.body", base64) ------------


def verify(body: bytes, headers) -> dict:
    """The event, when its signature and timestamp are right; ValueError otherwise."""
    message_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(time.time() - int(timestamp)) > TOLERANCE:
        raise ValueError("timestamp too far from now")
    key = base64.b64decode(SIGNING_SECRET.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    # Several signatures during a secret rotation: one matching is enough.
    for signature in headers["webhook-signature"].split(" "):
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return json.loads(body)
    raise ValueError("no valid signature")


# 2. Call the API (OAuth 2.0 client credentials, an Idempotency-Key on every POST) ----------------


def token() -> str:
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": "read answer"}).encode()
    basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    request = urllib.request.Request(f"{API}/oauth/token", data=form, headers={"Authorization": f"Basic {basic}"})  # noqa: S310 - API checked above
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
        return json.load(answer)["access_token"]


def call(access: str, method: str, path: str, *, json_body=None, data: bytes = b"", content_type: str = ""):
    headers = {"Authorization": f"Bearer {access}"}
    if method == "POST":
        headers["Idempotency-Key"] = str(uuid.uuid4())  # keep it to retry the very same request safely
    if json_body is not None:
        data, content_type = json.dumps(json_body).encode(), "application/json"
    if content_type:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(f"{API}{path}", data=data or None, headers=headers, method=method)  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - API checked above
        return json.load(answer)


def multipart(name: str, filename: str, content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: application/pdf\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def report_pdf(reference: str) -> bytes:
    """A one-page PDF saying the order is done (a real system attaches its report)."""
    text = f"Appraisal report for order {reference}".replace("(", "").replace(")", "")
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


# 3. Work an order ----------------------------------------------------------------------------------

# What this system concluded (a real one reads its appraiser's report): the values it can send, by name.
FINDINGS = {
    "appraisedValue": 812000,
    "effectiveDate": time.strftime("%Y-%m-%d"),
    "condition": "C3",
    "comments": "Well maintained; normal wear.",
}


def loan_for(form: dict) -> dict:
    """The delivery's `loan`, filled from the product's form (GET /products/{name}: `delivery_loan`,
    a JSON Schema staff admins edit): each field it describes that the findings cover, each value
    among the field's choices; a field whose required values are not all found is left out."""
    loan = {}
    for field, schema in (form.get("properties") or {}).items():
        values = {}
        for name, rule in (schema.get("properties") or {}).items():
            choices = rule.get("enum") or [choice["const"] for choice in rule.get("oneOf", []) if "const" in choice]
            if name in FINDINGS and (not choices or FINDINGS[name] in choices):
                values[name] = FINDINGS[name]
        if values and all(name in values for name in schema.get("required", [])):
            loan[field] = values
    return loan


def work(order_id: int) -> None:
    access = token()
    order = call(access, "GET", f"/orders/{order_id}")
    print(f"order {order_id} ({order['reference']}): {order['request']['loan'].get('property', {})}")
    call(access, "POST", f"/orders/{order_id}/acknowledge")
    call(access, "POST", f"/orders/{order_id}/status-updates", json_body={"text": "Inspection booked"})
    body, content_type = multipart("file", "report.pdf", report_pdf(order["reference"]))
    document = call(access, "POST", f"/orders/{order_id}/documents", data=body, content_type=content_type)
    product = call(access, "GET", f"/products/{urllib.parse.quote(order['product'], safe='')}")
    [form] = [f for f in product["forms"] if f["request_type"] == order["request"]["type"]] or product["forms"][:1]
    loan = loan_for(form["delivery_loan"])
    final = {"final": True, "message": "Appraisal complete", "loan": loan, "documents": [document["id"]]}
    call(access, "POST", f"/orders/{order_id}/deliveries", json_body=final)
    print(f"order {order_id}: delivered with {sorted(loan)}")


class Events(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            event = verify(body, self.headers)
        except (KeyError, ValueError) as refused:
            print(f"refused an event: {refused}")
            self.send_response(401)
            self.end_headers()
            return
        self.send_response(204)  # answer at once; work after (the sender waits a few seconds only)
        self.end_headers()
        message_id = self.headers["webhook-id"]
        if message_id in seen_ids:
            return
        seen_ids.add(message_id)
        print(f"{event['type']}: order {event['data']['order']['id']} is {event['data']['order']['status']}")
        if event["type"] == "order.created":
            threading.Thread(target=work, args=(event["data"]["order"]["id"],), daemon=True).start()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    print(f"order system: events on http://127.0.0.1:{PORT}/events, answers to {API}")
    ThreadingHTTPServer(("127.0.0.1", PORT), Events).serve_forever()

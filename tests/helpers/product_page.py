"""The product admin's change page as a browser sees it: its form's fields read from the HTML
(to post back, changed or not) and the text of an element found by its class; and a product's
entitlements and webhooks as the service lists them."""

from html.parser import HTMLParser

from django.test.html import Element, parse_html
from django.urls import reverse

from partner.platform import formats, urns

WEBHOOK_URL = "https://partner.example.com/v1/webhooks"


def transaction_entitlement(**extra) -> dict:
    return {
        "requestTypes": ["NEW_REQUEST"],
        "request": {"fields": ["loanNumber", "property"]},
        "response": {
            "fields": ["property"],
            "results": [{"action": formats.DISCLOSURE_ACTION, "formats": [formats.DISCLOSURE_FORMAT]}],
        },
        "created": "2026-01-05T09:00:00Z",
        "createdBy": "urn:svc:partner:P-1:user:admin",
        "extensionCount": 0,
        **extra,
    }


def listed_fields() -> dict:
    """Product fields: one allowed instance, an origin and a transaction entitlement, one webhook."""
    return {
        "access_allow": [urns.instance_urn("BE11223344")],
        "data_origin": {"fields": ["loanNumber"]},
        "data_transaction": [transaction_entitlement()],
        "webhooks": [
            {
                "subscriptionId": "sub-1",
                "url": WEBHOOK_URL,
                "events": ["created"],
                "resource": urns.transaction_resource_type(),
            }
        ],
    }


def change_url(product) -> str:
    return reverse("admin:catalog_product_change", args=[product.pk])


class _FormFields(HTMLParser):
    """The fields a browser would submit from <form id=form_id> (the rows' "Add" templates aside)."""

    def __init__(self, form_id):
        super().__init__(convert_charrefs=True)
        self.form_id, self.inside, self.data = form_id, False, {}
        self._select = self._textarea = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == self.form_id
        name = attrs.get("name")
        if not self.inside or (name and "__prefix__" in name):
            return
        if tag == "input" and name:
            kind = attrs.get("type", "text")
            if kind in ("checkbox", "radio"):
                if "checked" in attrs:
                    self.data[name] = attrs.get("value") or "on"
            elif kind not in ("submit", "button", "file", "reset", "image"):
                self.data[name] = attrs.get("value") or ""
        elif tag == "textarea" and name:
            self._textarea, self.data[name] = name, ""
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and ("selected" in attrs or self._select not in self.data):
            self.data[self._select] = attrs.get("value") or ""

    def handle_data(self, data):
        if self._textarea:
            self.data[self._textarea] += data

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "textarea" and self._textarea:
            self.data[self._textarea] = self.data[self._textarea].removeprefix("\n")
            self._textarea = None
        elif tag == "select":
            self._select = None


def form_data(html: str, form_id: str = "product_form") -> dict:
    parser = _FormFields(form_id)
    parser.feed(html)
    return parser.data


def product_post_data(client, product, **changes) -> dict:
    """What the product's change page posts when `changes` are typed into it."""
    response = client.get(change_url(product))
    assert response.status_code == 200
    return {**form_data(response.content.decode()), **changes}


def _found(node, css_class):
    if isinstance(node, Element):
        if css_class in (dict(node.attributes).get("class") or "").split():
            yield node
        for child in node.children:
            yield from _found(child, css_class)


def _text(node) -> str:
    if isinstance(node, Element):
        return " ".join(_text(child) for child in node.children)
    return str(node)


def texts_of(html: str, css_class: str) -> list[str]:
    """The text of every element of the page with `css_class`, in document order."""
    return [" ".join(_text(node).split()) for node in _found(parse_html(html), css_class)]

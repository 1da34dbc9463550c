"""The rows of a product's entitlements and webhooks (spec: Product, Action entitlement).

One row per lender instance (allowed or denied), per webhook subscription, and per
transaction data entitlement, each with its action results as rows of its own. The
rules are `catalog.validation`'s: a row checks a field with the rule for one value
(an instance URN, a URL, request types) so the message stands next to that field,
and the list's own rule runs over the rows once they are valid.
"""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.functional import lazy

from partner.platform import formats, urns

from .. import validation
from .rows import RowForm, RowsField, RowsFormSet, StringListField


class OptionalJSONObjectField(forms.JSONField):
    """An open JSON object of the spec typed in (the list's rule checks it is an object); empty
    means the key is left out, not set to `null`."""

    widget = forms.Textarea(attrs={"rows": 2, "class": "product-json"})

    def prepare_value(self, value):
        return "" if value is None else super().prepare_value(value)


def _raise_problems(problems):
    if problems:
        raise ValidationError(problems)


# -- lender instances (entitlements.access.allow / deny) ---------------------


def _instance_help() -> str:
    return f"The lender's host instance, like {urns.instance_urn('BE11223344')}."


class InstanceRowForm(RowForm):
    urn = forms.CharField(label="Lender instance URN", help_text=lazy(_instance_help, str)())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["urn"].widget.attrs["placeholder"] = urns.instance_urn("<instance id>")

    @classmethod
    def initial_from_item(cls, item) -> dict:
        return {"urn": item}

    def clean_urn(self):
        value = self.cleaned_data["urn"].strip()
        problem = validation.instance_urn_problem(value)
        _raise_problems([problem] if problem else [])
        return value

    def item(self):
        return self.cleaned_data["urn"]


class InstanceRowsFormSet(RowsFormSet):
    add_label = "Add a lender instance"

    def problems(self, items):
        return validation.instance_urns_problems(items)


class InstanceRowsField(RowsField):
    formset_class = forms.formset_factory(InstanceRowForm, formset=InstanceRowsFormSet, extra=0, can_delete=True)


# -- webhook subscriptions (webhooks) -----------------------------------------


def resource_choices() -> list[tuple[str, str]]:
    names = {
        urns.transaction_resource_type(): "New transaction requests",
        urns.event_resource_type(): "Response callbacks",
    }
    return [(urn, names.get(urn, urn)) for urn in urns.webhook_resource_types()]


def _resource_help() -> str:
    kinds = ", ".join(f"{urn} ({name.lower()})" for urn, name in resource_choices())
    return f"The resource whose events are sent: {kinds}."


class WebhookRowForm(RowForm):
    resource = forms.ChoiceField(label="Notifications of", help_text=lazy(_resource_help, str)())
    events = StringListField(
        label="Events",
        help_text=f"Event types the service sends: {', '.join(formats.WEBHOOK_EVENT_TYPES)}.",
        required=True,
    )
    url = forms.CharField(label="Sent to", help_text="The address the service posts them to (http or https).")
    subscription_id = forms.CharField(
        label="Subscription id", required=False, help_text="Given by the service; empty for a new subscription."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["resource"].choices = [("", "---------"), *resource_choices()]
        self.fields["events"].widget.attrs["placeholder"] = formats.WEBHOOK_EVENT_CREATED
        self.fields["url"].widget.attrs["placeholder"] = "https://partner.example.com/v1/webhooks"

    @classmethod
    def initial_from_item(cls, item) -> dict:
        item = item if isinstance(item, dict) else {}
        return {
            "stored": item,
            "resource": item.get("resource", ""),
            "events": item.get("events", []),
            "url": item.get("url", ""),
            "subscription_id": item.get("subscriptionId", ""),
        }

    def clean_url(self):
        value = self.cleaned_data["url"].strip()
        _raise_problems(validation.url_problems(value))
        return value

    def clean_events(self):
        value = self.cleaned_data["events"]
        problem = formats.event_types_problem(value)
        _raise_problems([problem] if problem else [])
        return value

    def item(self):
        data = self.cleaned_data
        stored = self.stored_item()
        item = {"subscriptionId": data["subscription_id"]} if data["subscription_id"] else {}
        item.update({"url": data["url"], "events": data["events"], "resource": data["resource"]})
        item.update({key: value for key, value in stored.items() if key not in ("subscriptionId", *item)})
        return item


class WebhookRowsFormSet(RowsFormSet):
    add_label = "Add a webhook subscription"

    def problems(self, items):
        return validation.webhooks_problems(items)


class WebhookRowsField(RowsField):
    formset_class = forms.formset_factory(WebhookRowForm, formset=WebhookRowsFormSet, extra=0, can_delete=True)


# -- transaction data entitlements and their action results -------------------


class ActionResultRowForm(RowForm):
    action = forms.CharField(label="Action", help_text="An upper-case action name.")
    formats = StringListField(label="Formats", help_text="Media types of the action's details.", required=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["action"].widget.attrs["placeholder"] = formats.DISCLOSURE_ACTION
        self.fields["formats"].widget.attrs["placeholder"] = formats.DISCLOSURE_FORMAT

    @classmethod
    def initial_from_item(cls, item) -> dict:
        item = item if isinstance(item, dict) else {}
        return {"stored": item, "action": item.get("action", ""), "formats": item.get("formats", [])}

    def item(self):
        item = {"action": self.cleaned_data["action"].strip(), "formats": self.cleaned_data["formats"]}
        item.update({key: value for key, value in self.stored_item().items() if key not in item})
        return item


class ActionResultRowsFormSet(RowsFormSet):
    add_label = "Add an action result"
    where = "Entitlement"  # how the rule's messages name the entitlement these results belong to

    def problems(self, items):
        return validation.action_entitlements_problems(items, where=self.where)


ActionResultRows = forms.formset_factory(ActionResultRowForm, formset=ActionResultRowsFormSet, extra=0, can_delete=True)


class TransactionEntitlementRowForm(RowForm):
    """One transaction data entitlement; its action results (`response.results`) are rows of their own."""

    help_in_heading = False  # rendered as a box of labelled fields

    request_types = StringListField(
        label="Request types", required=False, help_text="The request types it covers, like NEW_REQUEST."
    )
    request = OptionalJSONObjectField(
        label="Request data",
        required=False,
        help_text='What a request may carry (request), a JSON object like {"fields": ["loanNumber"]}.',
    )
    response = OptionalJSONObjectField(
        label="Response data",
        required=False,
        help_text="What our response may carry (response, its action results aside), a JSON object.",
    )

    FACTS = [("created", "created"), ("createdBy", "created by"), ("extensionCount", "extension count")]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["request_types"].widget.attrs["placeholder"] = "NEW_REQUEST, ACCEPTED_ORDER"
        response = self.stored_item().get("response")
        results = response.get("results") if isinstance(response, dict) else None
        self.results = ActionResultRows(
            self.data if self.is_bound else None,
            self.files if self.is_bound else None,
            prefix=f"{self.prefix}-results",
            initial=ActionResultRows.initial_from_items(results),
        )
        self.results.where = f"Entitlement {self.index + 1}" if self.index is not None else "New entitlement"

    @classmethod
    def initial_from_item(cls, item) -> dict:
        item = item if isinstance(item, dict) else {}
        response = item.get("response")
        if isinstance(response, dict) and "results" in response:  # the results are rows of their own
            response = {key: value for key, value in response.items() if key != "results"} or None
        return {
            "stored": item,
            "request_types": item.get("requestTypes", []),
            "request": item.get("request"),
            "response": response,
        }

    def facts(self) -> str:
        """What the service keeps of this entitlement: shown, and left as it is."""
        stored = self.stored_item()
        facts = [f"{label} {stored[key]}" for key, label in self.FACTS if key in stored]
        return f"On the service: {', '.join(facts)}." if facts else ""

    def clean_request_types(self):
        value = self.cleaned_data["request_types"]
        _raise_problems(validation.request_types_problems(value))
        return value

    def has_changed(self):
        return super().has_changed() or self.results.has_changed()

    def clean(self):
        cleaned = super().clean()
        if not self.results.is_valid():
            raise ValidationError("Correct its action results below.")
        return cleaned

    def item(self):
        data, stored = self.cleaned_data, self.stored_item()
        item = {}
        if data["request_types"] or "requestTypes" in stored or not stored:
            item["requestTypes"] = data["request_types"]
        if data["request"] is not None:
            item["request"] = data["request"]
        response, results = data["response"], self.results.items()  # response: as typed in, or None
        stored_response = stored.get("response")
        if results or (isinstance(stored_response, dict) and "results" in stored_response):
            response = {} if response is None else response
            if isinstance(response, dict):  # else the list's rule says it must be an object
                response = {**response, "results": results}
        if response is not None:
            item["response"] = response
        item.update({key: value for key, value in stored.items() if key not in ("requestTypes", "request", "response")})
        return item


class TransactionEntitlementRowsFormSet(RowsFormSet):
    template_name_rows = "admin/catalog/product/rows/entitlements.html"
    add_label = "Add a transaction entitlement"

    def problems(self, items):
        return validation.data_transaction_problems(items)


class TransactionEntitlementRowsField(RowsField):
    formset_class = forms.formset_factory(
        TransactionEntitlementRowForm, formset=TransactionEntitlementRowsFormSet, extra=0, can_delete=True
    )

"""The staff's order page and its actions, behind the admin's login (`admin_staff.StaffOrderAdmin`).

Thin: the page is drawn from selectors; every POST needs the change permission (view-only staff
get the page without its forms, and 403 for a POST), checks its form, calls one service of
`partner.fulfillment.staff.services` and redirects to the page (POST/redirect/GET) with a message. A
refused button (take, release, remove, send again) is an error message; a refused form keeps what
was typed and shows the refusal next to its field.

Documents are downloaded here too (any order's: staff-worked orders' and automated reports),
by staff who may view orders; each download is logged with who and which document, never its
content.
"""

import contextlib
import logging

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from partner.fulfillment.models import FINAL_STATUSES, Delivery, Order, OrderDocument
from partner.fulfillment.staff import services as staff
from partner.fulfillment.staff.forms import DeclineForm, DeliveryForm, StatusUpdateForm, UploadForm, replace_form
from partner.fulfillment.staff.selectors import (
    age_text,
    due_text,
    order_actions_open,
    order_history,
    order_overdue,
    order_request,
    status_label,
)
from partner.fulfillment.staff.services import StaffActionRefused

logger = logging.getLogger(__name__)

PAGE_TEMPLATE = "admin/fulfillment/stafforder/order.html"  # the admin's frame, its style and breadcrumbs
PAGE_BODY_TEMPLATE = "fulfillment/stafforder/order.html"  # the page's body, drawn with Jinja2
TAKE_OVER_TEMPLATE = "admin/fulfillment/stafforder/take_over.html"
CONFIRM_TEMPLATE = "admin/fulfillment/stafforder/confirm.html"


def page_url(order_id: int) -> str:
    return reverse("admin:fulfillment_stafforder_change", args=[order_id])


def _order(model_admin, request, order_id: int) -> Order:
    # get(), not first(): first() would sort the one row by the queue's ordering (an expression, which
    # costs more to compile than the rest of the query).
    try:
        return model_admin.get_queryset(request).get(pk=order_id)
    except model_admin.model.DoesNotExist:
        raise Http404("No such order to work.") from None


def _acting_on(model_admin, request, order_id: int) -> Order:
    """The order a POST acts on, for staff who may change orders (403 otherwise)."""
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    return _order(model_admin, request, order_id)


def _document_acting_on(model_admin, request, document_id: int) -> OrderDocument:
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    document = OrderDocument.objects.filter(pk=document_id, order__staff_worked=True).first()
    if document is None:
        raise Http404("No such document.")
    return document


# The page ----------------------------------------------------------------------------------------


def order_page(model_admin, request, order: Order, *, bound=None):
    """The order: header, request, timeline, documents and, for who may act on it now, the forms.
    `bound` is a form sent back with its errors (it replaces the blank one of its prefix)."""
    now = timezone.now()
    history = order_history(order)
    may_change = model_admin.has_change_permission(request, order)
    mine = order.assigned_to_id is not None and order.assigned_to_id == request.user.pk
    can_act = may_change and mine and order_actions_open(order, history.deliveries)
    forms = {
        "status": StatusUpdateForm(),
        "upload": UploadForm(),
        "deliver": DeliveryForm.for_order(order),
        "decline": DeclineForm(),
    }
    documents = [(document, replace_form(document.pk)) for document in history.documents_waiting]
    if bound is not None:
        forms[bound.prefix] = bound
        documents = [(d, bound if bound.prefix == f"replace-{d.pk}" else form) for d, form in documents]
    product = staff.order_product(order)
    company = order.ordered_by.company if order.ordered_by and order.ordered_by.company else None
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"Order {order.reference_number or order.transaction_id}",
        "order": order,
        "status_label": status_label(order),
        "product_label": (product.listing_name or product.name) if product else order.product_name,
        "company": company,
        "age": age_text(order, now=now),
        "due": due_text(order, now=now),
        "overdue": order_overdue(order, now=now),
        "may_change": may_change,
        "may_take": may_change and order.status not in FINAL_STATUSES,
        "mine": mine,
        "can_act": can_act,
        "request_parts": order_request(order),
        "timeline": history.timeline,
        "documents": documents,
        "forms": forms,
    }
    # The body in Jinja2 (less than half the CPU of the template language), inside the admin's frame.
    context["body"] = mark_safe(render_to_string(PAGE_BODY_TEMPLATE, context, request, using="jinja2"))  # noqa: S308
    return TemplateResponse(request, PAGE_TEMPLATE, context)


# Buttons ------------------------------------------------------------------------------------------


def _button(request, order_id: int, act, success: str):
    """Call one service; its refusal becomes an error message; back to the page either way."""
    try:
        act()
    except StaffActionRefused as refused:
        messages.error(request, refused.message)
    else:
        messages.success(request, success)
    return redirect(page_url(order_id))


@require_POST
def take_view(request, order_id: int, *, model_admin):
    order = _acting_on(model_admin, request, order_id)
    act = lambda: staff.order_take(order_id=order.pk, user=request.user)  # noqa: E731
    return _button(request, order.pk, act, "You work this order now.")


def take_over_view(request, order_id: int, *, model_admin):
    """GET: who works the order and since when, to confirm; POST: take it over from them."""
    order = _acting_on(model_admin, request, order_id)
    holder = order.assigned_to
    if request.method == "POST":
        act = lambda: staff.order_take(order_id=order.pk, user=request.user, take_over=True)  # noqa: E731
        success = f"You took the order over from {holder.get_username()}." if holder else "You work this order now."
        return _button(request, order.pk, act, success)
    if holder is None or holder.pk == request.user.pk:
        return redirect(page_url(order.pk))
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"Take over order {order.reference_number or order.transaction_id}",
        "order": order,
        "holder": holder,
    }
    return TemplateResponse(request, TAKE_OVER_TEMPLATE, context)


@require_POST
def release_view(request, order_id: int, *, model_admin):
    order = _acting_on(model_admin, request, order_id)
    act = lambda: staff.order_release(order_id=order.pk, user=request.user)  # noqa: E731
    return _button(request, order.pk, act, "You released the order: anyone may take it.")


@require_POST
def document_remove_view(request, document_id: int, *, model_admin):
    document = _document_acting_on(model_admin, request, document_id)
    act = lambda: staff.document_remove(attachment_id=document.pk, user=request.user)  # noqa: E731
    return _button(request, document.order_id, act, f"Removed {document.name}.")


@require_POST
def delivery_retry_view(request, delivery_id: int, *, model_admin):
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    delivery = Delivery.objects.filter(pk=delivery_id, order__staff_worked=True).first()
    if delivery is None:
        raise Http404("No such delivery.")
    act = lambda: staff.delivery_retry(delivery_id=delivery.pk, user=request.user)  # noqa: E731
    return _button(request, delivery.order_id, act, f"The {delivery.get_kind_display().lower()} is sent again.")


# Forms --------------------------------------------------------------------------------------------


def _form_post(model_admin, request, order: Order, form, *, act, success, field=None):
    """Check `form`, then `act(cleaned_data)` (one service call) once; redirect with `success(result)`,
    or draw the page again with the form's errors (or the service's refusal on `field`)."""
    if not form.is_valid():
        return order_page(model_admin, request, order, bound=form)
    if not form.claim():
        messages.warning(request, "That form was already sent: the second submission was ignored.")
        return redirect(page_url(order.pk))
    try:
        result = act(form.cleaned_data)
    except StaffActionRefused as refused:
        form.release()
        form.add_error(field, refused.message)
        return order_page(model_admin, request, order, bound=form)
    except Exception:
        # Not done (the database away, a worker stopping): the same form, sent again, must act, not
        # be "already sent" while nothing was stored.
        with contextlib.suppress(Exception):
            form.release()
        raise
    messages.success(request, success(result))
    return redirect(page_url(order.pk))


@require_POST
def status_update_view(request, order_id: int, *, model_admin):
    order = _acting_on(model_admin, request, order_id)
    return _form_post(
        model_admin,
        request,
        order,
        StatusUpdateForm(request.POST),
        act=lambda data: staff.status_update_post(order_id=order.pk, text=data["partner_status"], user=request.user),
        success=lambda delivery: "Status update stored: it is sent to the lender in a moment.",
        field="partner_status",
    )


def _attach_all(order: Order, uploads: list, user) -> list[OrderDocument]:
    """Each file checked by the form, attached by the service; a refusal names what was attached before it."""
    attached = []
    for upload in uploads:
        try:
            attached.append(staff.document_attach(order_id=order.pk, upload=upload, user=user))
        except StaffActionRefused as refused:
            before = f" (attached before it: {', '.join(d.name for d in attached)})" if attached else ""
            raise StaffActionRefused(f"{upload.name}: {refused.message}{before}") from refused
    return attached


@require_POST
def upload_view(request, order_id: int, *, model_admin):
    order = _acting_on(model_admin, request, order_id)
    return _form_post(
        model_admin,
        request,
        order,
        UploadForm(request.POST, request.FILES),
        act=lambda data: _attach_all(order, data["files"], request.user),
        success=lambda attached: "Attached " + ", ".join(d.name for d in attached) + ".",
        field="files",
    )


@require_POST
def document_replace_view(request, document_id: int, *, model_admin):
    document = _document_acting_on(model_admin, request, document_id)
    return _form_post(
        model_admin,
        request,
        document.order,
        replace_form(document.pk, request.POST, request.FILES),
        act=lambda data: staff.document_replace(attachment_id=document.pk, upload=data["file"], user=request.user),
        success=lambda new: f"Replaced {document.name} by {new.name}.",
        field="file",
    )


CONFIRMED = "confirmed"  # the button of the confirmation page that sends what it shows
CHANGE = "change"  # its button back to the order page with the form as typed


EMPTY_FINAL = (
    "Nothing is in this final delivery: no document, no value and no status for the lender. The lender "
    "reads only “Order completed”, and nothing more can be sent afterwards. Go back to attach the report "
    "or enter its values, unless the order really ends with nothing to deliver."
)


def _confirmation(
    model_admin, request, order: Order, form, *, action: str, title: str, rows, button: str, warning: str = ""
):
    """The page that shows what a final action sends before it is sent: the same form, hidden,
    with a button that sends it and one that goes back to change it (no JavaScript needed);
    `warning`, when given, said first."""
    context = {
        "warning": warning,
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": title,
        "order": order,
        "form": form,
        "action": reverse(f"admin:fulfillment_stafforder_{action}", args=[order.pk]),
        "rows": rows,
        "button": button,
        "confirmed": CONFIRMED,
        "change": CHANGE,
    }
    return TemplateResponse(request, CONFIRM_TEMPLATE, context)


def _asks_first(request) -> str | None:
    """What a POST of a final action wants: None to act (it was confirmed), CHANGE to go back to the
    page with the form as typed, or "ask" to show what would be sent."""
    if CHANGE in request.POST:
        return CHANGE
    return None if CONFIRMED in request.POST else "ask"


@require_POST
def deliver_view(request, order_id: int, *, model_admin):
    """A partial delivery is stored at once; a final one is shown first (what the lender will get)
    and stored when confirmed."""
    order = _acting_on(model_admin, request, order_id)

    def act(data):
        return staff.delivery_request(
            order_id=order.pk,
            final=data["kind"] == "final",
            user=request.user,
            partner_status=data["partner_status"],
            loan=data["loan_data"],
            result=data["result"],
        )

    def success(delivery):
        count = delivery.documents_delivered
        what = "Final delivery" if delivery.kind == "final" else "Delivery"
        return f"{what} stored with {count} document(s): the lender gets it in a moment."

    form = DeliveryForm.for_order(order, request.POST)
    step = _asks_first(request)
    if step == CHANGE:
        return order_page(model_admin, request, order, bound=form)
    if step == "ask" and form.is_valid() and form.cleaned_data["kind"] == "final":
        documents = staff.documents_waiting(order)
        data = form.cleaned_data
        empty = not (documents or data["loan_data"] or data["result"] or data["partner_status"])
        rows = [
            {"label": "What the lender reads", "text": form.cleaned_data["partner_status"] or "Order completed"},
            {"label": "Documents", "text": ", ".join(d.name for d in documents) or "None"},
        ]
        return _confirmation(
            model_admin,
            request,
            order,
            form,
            action="deliver",
            title=f"Send the final delivery of order {order.reference_number or order.transaction_id}?",
            rows=rows + [{"label": legend, "pairs": pairs} for legend, pairs in form.summary()],
            button="Send the final delivery",
            warning=EMPTY_FINAL if empty else "",
        )
    return _form_post(model_admin, request, order, form, act=act, success=success)


@require_POST
def decline_view(request, order_id: int, *, model_admin):
    """A decline is shown first (the reason as the lender will read it) and stored when confirmed."""
    order = _acting_on(model_admin, request, order_id)
    form = DeclineForm(request.POST)
    step = _asks_first(request)
    if step == CHANGE:
        return order_page(model_admin, request, order, bound=form)
    if step == "ask" and form.is_valid() and (form.cleaned_data["reason"] or "").strip():
        return _confirmation(
            model_admin,
            request,
            order,
            form,
            action="decline",
            title=f"Decline order {order.reference_number or order.transaction_id}?",
            rows=[
                {
                    "label": "What the lender reads",
                    "text": f"{staff.DECLINE_PREFIX}{form.cleaned_data['reason'].strip()}",
                }
            ],
            button="Decline the order",
        )
    return _form_post(
        model_admin,
        request,
        order,
        form,
        act=lambda data: staff.order_decline(order_id=order.pk, reason=data["reason"], user=request.user),
        success=lambda delivery: "Decline stored: the lender is told in a moment.",
        field="reason",
    )


# Download -----------------------------------------------------------------------------------------


def document_download_view(request, document_id: int, *, model_admin):
    """A document's file from storage, as an attachment; for staff who may view orders; logged."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    document = OrderDocument.objects.select_related("order").filter(pk=document_id).first()
    if document is None or not document.file:
        raise Http404("No such document, or its file was removed (retention).")
    try:
        handle = document.file.open("rb")
    except FileNotFoundError as missing:
        raise Http404("The document's file is missing from storage.") from missing
    logger.info(
        "document %s of transaction %s downloaded by %s",
        document.pk,
        document.order.transaction_id,
        request.user.get_username(),
    )
    response = FileResponse(handle, as_attachment=True, filename=document.name, content_type=document.mime_type)
    response["X-Content-Type-Options"] = "nosniff"
    return response

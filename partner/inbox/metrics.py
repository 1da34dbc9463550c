"""The inbox's figures: webhooks answered by status and those of a type we do not handle (counted), the backlog
and the relay's lag (read when scraped)."""

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client import Counter

from partner.core.metrics import gauge
from partner.inbox.models import Notification, NotificationState

WEBHOOKS = Counter(
    "partner_webhooks_received",
    "Webhook requests answered, by HTTP status (202 accepted or duplicate, 400, 401, 411, 413, 503).",
    ["status"],
)
# A profile whose URN words are not the service's (SVC_URN_*) has every webhook stored `ignored`:
# this counts them (no label: the types are the sender's text; the dashboard lists them).
WEBHOOKS_UNHANDLED = Counter(
    "partner_webhooks_unhandled",
    "Signed webhooks stored and answered 202 whose resource or event type we do not handle (stored ignored).",
)
REFUSED_UNSTORED = Counter(
    "partner_webhooks_refused_unstored",
    "Webhooks refused (signed with one product's secret, naming another) past the cap of their signing "
    "product's window (INBOX_REFUSED_MAX_PER_WINDOW): answered 401, not stored.",
    ["product"],
)

# Rows waiting for the relay, the broker or a worker.
BACKLOG_STATES = (NotificationState.RECEIVED, NotificationState.QUEUED, NotificationState.PROCESSING)


def _age(oldest) -> float:
    return max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0


def inbox_collect():
    backlog = Notification.objects.filter(state__in=BACKLOG_STATES)
    counts = dict(backlog.values_list("state").annotate(count=Count("pk")).values_list("state", "count"))
    yield gauge(
        "partner_inbox_backlog",
        "Notifications stored and not yet processed, by state.",
        {(state.value,): counts.get(state, 0) for state in BACKLOG_STATES},
        ("state",),
    )
    yield gauge(
        "partner_inbox_oldest_backlog_age_seconds",
        "Age of the oldest notification not yet processed (0: none).",
        {(): _age(backlog.aggregate(oldest=Min("received_at"))["oldest"])},
    )
    waiting = Notification.objects.filter(state=NotificationState.RECEIVED).aggregate(oldest=Min("received_at"))
    yield gauge(
        "partner_inbox_relay_lag_seconds",
        "How long the oldest stored notification has waited for the relay to hand it to the broker (0: none).",
        {(): _age(waiting["oldest"])},
    )

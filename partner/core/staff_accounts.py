"""Admin logins of the staff who work orders: staff, not superusers, with what the work needs.

What the work needs is the view and change permissions of the orders (the fulfillment app:
orders, their documents, steps and deliveries) and of the webhook inbox, and the view permission of
the connector's pages (connections, events, connected orders to take over), held through one group,
`Order staff`, so that a person added by hand in the admin can be given the same. The apps are
named by label: core imports neither.

The demo login's password is public (it is in this repository, `demo_values`): with DJANGO_DEBUG
off it is refused, for any username.
"""

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from partner.core.demo_values import DEMO_STAFF_PASSWORD
from partner.core.errors import ApplicationError

logger = logging.getLogger(__name__)

ORDER_STAFF_GROUP = "Order staff"
# app label -> what order staff may do with each of its models (an action such as "view", or a
# permission's whole codename). The connector's pages are read (a connection's health, its events, a
# connected order) and a connected order is taken over by hand; changing a connection (its endpoint,
# products, replays) and rotating its secrets stay with those given more.
ORDER_STAFF_ACTIONS = {
    "fulfillment": ("view", "change"),
    "inbox": ("view", "change"),
    "connector": ("view", "take_over_connectedorder"),
}


def order_staff_permissions():
    """The permissions of the order staff (ORDER_STAFF_ACTIONS)."""
    permissions = Permission.objects.filter(content_type__app_label__in=ORDER_STAFF_ACTIONS).select_related(
        "content_type"
    )
    return [
        p
        for p in permissions
        if {p.codename, p.codename.split("_", 1)[0]} & set(ORDER_STAFF_ACTIONS[p.content_type.app_label])
    ]


def order_staff_group_ensure() -> Group:
    """The `Order staff` group, holding exactly the order staff's permissions."""
    group, _ = Group.objects.get_or_create(name=ORDER_STAFF_GROUP)
    group.permissions.set(order_staff_permissions())
    return group


def _password_check(password: str, user) -> None:
    if not password:
        raise ApplicationError("The password must not be empty.")
    if password == DEMO_STAFF_PASSWORD and not settings.DEBUG:
        raise ApplicationError(
            "This is the demo staff password, public in this repository: with DJANGO_DEBUG off, choose another."
        )
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise ApplicationError("The password is refused: " + " ".join(exc.messages)) from None


def staff_account_set(
    *, username: str, password: str | None = None, email: str | None = None, keep_existing: bool = False
):
    """Create or update an order staff login; returns (user, created). The password is hashed.

    A superuser is refused (this makes order staff, not administrators: `createsuperuser` does
    those), and so is a new login without a password. With `keep_existing`, a login that exists is
    left as it is (password, e-mail, sessions): `make demo` creates the demo login once, and a later
    run logs nobody out.
    """
    username = (username or "").strip()
    if not username:
        raise ApplicationError("A username is required.")
    user_model = get_user_model()
    with transaction.atomic():
        user = user_model.objects.select_for_update().filter(**{user_model.USERNAME_FIELD: username}).first()
        created = user is None
        if created:
            user = user_model(**{user_model.USERNAME_FIELD: username})
        elif user.is_superuser:
            raise ApplicationError(f"{username} is a superuser: this command manages order staff only.")
        elif keep_existing:
            order_staff_group_ensure()  # the group's permissions as this version has them
            return user, False
        if email is not None:
            user.email = email.strip()
        if password is not None:
            _password_check(password, user)
            user.set_password(password)
        elif created:
            raise ApplicationError("A new login needs a password.")
        user.is_staff, user.is_active, user.is_superuser = True, True, False
        user.save()
        user.groups.add(order_staff_group_ensure())
    logger.info("core: order staff login %s %s", username, "created" if created else "updated")
    return user, created

"""Staff permissions kept in the shared cache between requests (`CachedPermissionsBackend`).

Django's model backend reads a staff member's permissions with two queries (their own, their groups')
on every request that checks one, and every admin page and action checks several. This backend is
Django's, with each user's set of permissions kept under one key of the `default` cache, which every
web process shares:

- A set is stored with the permissions' generation it was read in. Whatever can change what someone
  may do (a user's groups or own permissions, a group's permissions; a group, a permission or a
  content type saved or deleted) starts a new generation when its transaction commits (signals,
  connected by `CoreConfig.ready()`), and a set of an older generation is read again from the
  database: a reader that loaded the rows before the commit cannot keep them past it.
- Whether the user is active or a superuser is not kept: it is read with the user, on every request.
- `PERMISSIONS_CACHE_SECONDS` bounds what escapes the signals (a change made in SQL or by a bulk
  insert into the tables that join users, groups and permissions, a new generation lost to a cache
  outage).
- The cache never fails a request: its error is logged once (its type) and the database answers.
"""

import logging
import uuid

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from partner.core.cache import CacheFailures

logger = logging.getLogger(__name__)

GENERATION_KEY = "auth:permissions:generation"
_KEPT_ON_USER = "_permissions_kept"  # the set read for this user object (one request)

_failures = CacheFailures(logger, "auth", "the staff's permissions")  # a failure logged once, until it answers


def _user_key(user_id) -> str:
    return f"auth:permissions:user:{user_id}"


class CachedPermissionsBackend(ModelBackend):
    """Django's model backend (sign-in, users, permission checks), each user's permissions read from the
    shared cache while their generation holds (the module's docstring)."""

    def get_all_permissions(self, user_obj, obj=None):
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        kept = user_obj.__dict__.get(_KEPT_ON_USER)
        if kept is None:
            kept = user_obj.__dict__[_KEPT_ON_USER] = self._permissions(user_obj)
        return kept

    def _permissions(self, user_obj) -> set[str]:
        key = _user_key(user_obj.pk)
        try:
            found = cache.get_many([GENERATION_KEY, key])
            generation = found.get(GENERATION_KEY)
            if generation is None:  # never set, or evicted: a new one (another reader's wins)
                cache.add(GENERATION_KEY, uuid.uuid4().hex, None)
                generation = cache.get(GENERATION_KEY)
        except Exception as exc:  # whatever the backend raises (Redis away, a file unreadable)
            _failures.failed("read", exc)
            return super().get_all_permissions(user_obj)
        _failures.answered()
        stored = found.get(key)
        if isinstance(stored, tuple) and stored[0] == generation:
            return stored[1]
        permissions = super().get_all_permissions(user_obj)
        try:
            cache.set(key, (generation, permissions), settings.PERMISSIONS_CACHE_SECONDS)
        except Exception as exc:
            _failures.failed("store", exc)
        return permissions


def permissions_changed(*, using: str | None = None) -> None:
    """Start a new generation of the kept permissions when the current transaction commits."""
    transaction.on_commit(_generation_new, using=using)


def _generation_new() -> None:
    try:
        cache.set(GENERATION_KEY, uuid.uuid4().hex, None)
    except Exception as exc:
        _failures.failed("renew the generation of", exc)


def _saved_or_deleted(sender, using=None, **kwargs) -> None:
    permissions_changed(using=using)


def _links_changed(sender, action, using=None, **kwargs) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        permissions_changed(using=using)


def receivers_connect() -> None:
    """A new generation with every change to who holds which permission."""
    user = get_user_model()
    for through in (user.groups.through, user.user_permissions.through, Group.permissions.through):
        label = through._meta.label_lower
        m2m_changed.connect(_links_changed, sender=through, dispatch_uid=f"permission-cache-links-{label}")
    for model in (Group, Permission, ContentType):
        label = model._meta.label_lower
        post_save.connect(_saved_or_deleted, sender=model, dispatch_uid=f"permission-cache-save-{label}")
        post_delete.connect(_saved_or_deleted, sender=model, dispatch_uid=f"permission-cache-delete-{label}")

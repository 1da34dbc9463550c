"""An emulator of the service, mounted at /sandbox/ when SANDBOX_ENABLED."""

from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate, post_save


def _fault_rules_changed(**kwargs):
    from .faults import rules_forget

    rules_forget()


class SandboxConfig(AppConfig):
    name = "partner.sandbox"
    verbose_name = "Sandbox (service emulator)"

    def ready(self):
        from partner.core.retention import purges_register

        from . import retention
        from .models import FaultRule

        purges_register(retention.PURGES)

        # The fault rules are cached for a second per process: forget them on any
        # change, and after a flush (which emits post_migrate), e.g. between tests.
        post_save.connect(_fault_rules_changed, sender=FaultRule, dispatch_uid="sandbox-faults-save")
        post_delete.connect(_fault_rules_changed, sender=FaultRule, dispatch_uid="sandbox-faults-delete")
        post_migrate.connect(_fault_rules_changed, dispatch_uid="sandbox-faults-migrate")

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
        from partner.core.retention import DELETE, purge_register

        from . import retention
        from .models import FaultRule

        for kind, plan, purge in (
            ("sandbox transactions", retention.transactions_plan, retention.transactions_purge),
            ("sandbox webhook deliveries", retention.deliveries_plan, retention.deliveries_purge),
            ("sandbox origins", retention.origins_plan, retention.origins_purge),
        ):
            purge_register(kind, setting="RETENTION_SANDBOX_DAYS", action=DELETE, plan=plan, purge=purge)

        # The fault rules are cached for a second per process: forget them on any
        # change, and after a flush (which emits post_migrate), e.g. between tests.
        post_save.connect(_fault_rules_changed, sender=FaultRule, dispatch_uid="sandbox-faults-save")
        post_delete.connect(_fault_rules_changed, sender=FaultRule, dispatch_uid="sandbox-faults-delete")
        post_migrate.connect(_fault_rules_changed, dispatch_uid="sandbox-faults-migrate")

from django.apps import AppConfig


class SandboxConfig(AppConfig):
    name = "partner.sandbox"
    verbose_name = "Sandbox (service emulator)"

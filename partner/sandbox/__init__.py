"""An emulator of the service, mounted at /sandbox/ when SANDBOX_ENABLED."""

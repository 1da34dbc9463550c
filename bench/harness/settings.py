"""Settings of the benchmark processes: the production settings, read from the environment a run sets
(`stack.app_env`), with one exception for the sandbox on the loopback: with DJANGO_DEBUG off an upload
slot's location must be https on a public address (`SVC_UPLOAD_LOCATION_STRICT`,
partner/platform/locations.py), and the emulated platform's slots are http on the loopback or the
hosts' bridge, so every order would fail at its upload."""

from config.settings.production import *  # noqa: F403

SVC_UPLOAD_LOCATION_STRICT = False

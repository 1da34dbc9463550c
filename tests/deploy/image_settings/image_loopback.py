"""Settings of the image test's worker: the image's production settings, with the one exception a
run against the embedded sandbox on http://127.0.0.1 needs (as bench/harness/settings.py):
production refuses an upload slot that is not https on a public address, and the sandbox's slots
are on the loopback. The test mounts this folder read-only into the image's file system and names
the module in DJANGO_SETTINGS_MODULE; the image itself holds no such module.
"""

from config.settings.production import *  # noqa: F403

SVC_UPLOAD_LOCATION_STRICT = False

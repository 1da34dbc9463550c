"""Settings shared by every kind of process, read from the environment.

Four modules, one per kind of process, picked by DJANGO_SETTINGS_MODULE:

- `base` (this one): every setting, declared once in the module of its concern (below). Where local
  runs and production differ, it holds what is safe in production, or nothing where production must
  be told (a secret key, the allowed hosts, the keys and the client secret).
- `local`: `manage.py` and `make run`. DEBUG, the public values of local runs and of the sandbox,
  and the sandbox installed and mounted at /sandbox/.
- `production`: `gunicorn config.wsgi` and `celery -A config` in a deployment. What a deployment must
  give is required, public demo values are refused, cookies are Secure and HSTS is on; the sandbox
  is not installed unless the process environment asks for it.
- `test`: the suite (pyproject.toml names it): local's values, each run with its own database,
  queue, cache and folders.

The modules of each concern, which this one gathers:

- `environment`: the reader every variable is read through (django-environ, the process environment
  and a `.env` file), and the values it could not use (ENVIRONMENT_MALFORMED).
- `framework`: Django's own (general, database, cache, apps, middleware, templates, static files).
- `security`: headers, proxies and origins, the encryption keys, the preflight at start, rate limits.
- `storage`: where documents are kept. `mail`: e-mail to staff.
- `observability`: metrics, logs, error reports.
- `platform`: the service's API. `celery`: the background work (broker, workers, leases, sweeps,
  periodic jobs). `retention`: how long personal data is kept.
- `inbox`, `fulfillment`, `connector`, `ui`, `sandbox`: each app's own; `api`: the REST framework
  and the OpenAPI schema.

Reading them writes nothing: no file, no folder, no `os.environ` (the broker's file and the metrics
folder are made when a process starts: `config/celery.py`, `partner/core/apps.py`). `manage.py check
--deploy` checks the rest of a deployment (partner/core/checks.py).
"""

from .api import *  # noqa: F403
from .celery import *  # noqa: F403
from .connector import *  # noqa: F403
from .environment import *  # noqa: F403
from .framework import *  # noqa: F403
from .fulfillment import *  # noqa: F403
from .inbox import *  # noqa: F403
from .mail import *  # noqa: F403
from .observability import *  # noqa: F403
from .platform import *  # noqa: F403
from .retention import *  # noqa: F403
from .sandbox import *  # noqa: F403
from .security import *  # noqa: F403
from .storage import *  # noqa: F403
from .ui import *  # noqa: F403

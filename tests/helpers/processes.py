"""Django started in another process: the environment a settings case runs under and `run_django`,
which starts Python with it, `manage_check_deploy` and `celery_worker_start`, and the production
settings that start; and a second process asking for a service token at the same moment as this one."""

import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def django_env(env_overrides):
    """The process environment of a Django subprocess: ours without any of the application's variables."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            (
                "DJANGO_",
                "DATABASE_",
                "SVC_",
                "FIELD_",
                "SANDBOX_",
                "CELERY_",
                "CACHE_URL",
                "HOST_ORIGINS",
                "PARTNER_",
                "DOCUMENT",
                "KUBERNETES_",  # a test run in a pod: the preflight would take it for a Kubernetes deployment
            )
        )
        and k not in ("PUBLIC_BASE_URL", "LOG_LEVEL")
    }
    # A local .env must not fill in what the test leaves out.
    env.update(
        {"DJANGO_SETTINGS_MODULE": "config.settings.local", "DJANGO_READ_DOT_ENV_FILE": "false", **env_overrides}
    )
    return env


# A server's start: `config.wsgi` (gunicorn's entry), which runs the preflight at start in production.
START = "import config.wsgi; print('started')"


def run_django(env_overrides, code=START, *, cwd="/"):
    """Python started with this environment (`django_env`), running `code` (a server's start by default)."""
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{code}"],
        env=django_env(env_overrides),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def manage_check_deploy(env_overrides) -> tuple[int, str]:
    """`manage.py check --deploy` in a new process, as an operator runs it, with exactly this
    environment: its exit code and its output (stdout and stderr). tests/helpers/settings_in_process.py
    runs the same command in this process, where a new one proves nothing more."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        env=django_env(env_overrides),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode, result.stdout + result.stderr


def celery_worker_start(env_overrides):
    """`celery -A config worker` started with this environment (its broker never reached when it refuses)."""
    return subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING"],
        env=django_env(env_overrides),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    # Strong values: the preflight refuses short or repetitive secrets (partner.E009).
    "DJANGO_SECRET_KEY": "tests-Q7vR2mXk9LpZ4sWc8NbY3hJd6FgT1aUe5oIq0rEy-secret-key",
    "DJANGO_ALLOWED_HOSTS": "partner.example.com",
    # Not the local runs' key (config/settings/local.py), which production refuses.
    "FIELD_ENCRYPTION_KEYS": "dGVzdHMtZmllbGQta2V5LW5vdC1hLXJlYWwtb25lLTA=",
    "SVC_CLIENT_ID": "partner-client-7c1d",  # not the sandbox's (partner.E001)
    "SVC_CLIENT_SECRET": "client-secret-K4wP9zR2xT7mQ",
    # https: plain http to the service is refused with DJANGO_DEBUG off (partner.E011).
    "SVC_BASE_URL": "https://api.service.example",
    # A broker server: one that needs none is refused in production (settings do not connect).
    "CELERY_BROKER_URL": "redis://redis.partner.example:6379/0",
    # Our company, not the demo's (partner.E013), and documents every process reads (partner.E015).
    "PARTNER_NAME": "Ridgeline Appraisal Co.",
    "PARTNER_ADDRESS": "12 Harbor Road",
    "PARTNER_CITY": "Portland",
    "PARTNER_STATE": "OR",
    "PARTNER_POSTAL_CODE": "97201",
    "PARTNER_PHONE": "503-555-0100",
    "PARTNER_EMAIL": "orders@ridgeline.example",
    "DOCUMENTS_SINGLE_HOST": "true",
}
# The sandbox's demo credentials, which local runs default to and production refuses.
DEMO_CLIENT_ID = "sandbox-partner-client"
DEMO_CLIENT_SECRET = "sandbox-partner-client-secret"  # noqa: S105
DEMO_SIGNING_SECRET = "sandbox-webhook-signing-secret"  # noqa: S105
SETTINGS = "import django; django.setup(); from django.conf import settings as s; "


TOKEN_SCRIPT = """
import json, sys, threading
import django
django.setup()
from partner.platform import tokens
from partner.platform.signals import token_requested
requested = []
token_requested.connect(lambda sender, **kw: requested.append(kw["status"]), weak=False)
print("ready", flush=True)
sys.stdin.readline()
got = []
threads = [threading.Thread(target=lambda: got.append(tokens.token_get())) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"requests": len(requested), "tokens": sorted(set(got))}), flush=True)
"""


def token_race_with_another_process(service_calls, *, threads: int = 4) -> dict:
    """Ask for a token in this process and, at the same moment, in a second Python process.

    The second process runs with the same settings module, run id (so the same
    file cache, or the same Redis from CACHE_URL) and service URLs. Returns the
    token requests each process made (ours as `service_calls`, the test's recorder,
    saw them) and the tokens each one got. Kept in one
    piece (over 60 lines): the other process, the simultaneous requests and the
    cleanup that always ends that process belong together.
    """
    import json as json_module
    import os
    import subprocess
    import sys

    from django.conf import settings

    from partner.platform import tokens

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "TEST_RUN_ID": str(getattr(settings, "RUN_ID", "")),
        "SVC_BASE_URL": settings.SVC_BASE_URL,
        "SVC_TOKEN_URL": settings.SVC_TOKEN_URL,
        "SVC_CLIENT_ID": settings.SVC_CLIENT_ID,
        "SVC_CLIENT_SECRET": settings.SVC_CLIENT_SECRET,
        "SVC_SCOPE": settings.SVC_SCOPE,
    }
    if not env["TEST_RUN_ID"]:
        env.pop("TEST_RUN_ID")
    other = subprocess.Popen(
        [sys.executable, "-c", TOKEN_SCRIPT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        cwd=str(settings.BASE_DIR),
    )
    try:
        assert other.stdout.readline().strip() == "ready"
        before, got = len(service_calls.tokens), []
        other.stdin.write("go\n")
        other.stdin.flush()
        workers = [threading.Thread(target=lambda: got.append(tokens.token_get())) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        requested = len(service_calls.tokens) - before
        out, _ = other.communicate(timeout=60)
    finally:
        if other.poll() is None:
            other.kill()
    theirs = json_module.loads(out.strip().splitlines()[-1])
    return {"ours": {"requests": requested, "tokens": sorted(set(got))}, "theirs": theirs}

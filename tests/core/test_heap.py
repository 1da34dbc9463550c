"""A web worker keeps what it loaded at start out of the collector's full passes (partner/core/heap.py)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_web_worker_moves_what_it_loaded_to_the_permanent_generation():
    """What a gunicorn worker does when it loads `config.wsgi`, in a process of its own."""
    script = "import gc, config.wsgi; print(gc.get_freeze_count(), len(gc.get_objects()))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    printed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr[-2000:]
    frozen, walked = map(int, printed.stdout.split()[-2:])
    assert frozen > 10_000  # Django's and the project's modules, the URL map, the settings
    assert walked < frozen // 10  # what a full collection still walks

"""One way for each job the structure repeats (docs/architecture.md):

- one DRF exception handler, `partner.core.api.exception_handler`: every view's errors go through
  it, and a view picks the shape of its answers by declaring `error_shape`, never a handler of its
  own;
- every registry (`*_register`: the purge's kinds, lease hand-backs, health warnings, metrics
  collectors, housekeeping chores; and a signal's receivers, `Signal.connect`) is filled in an
  AppConfig.ready(), never as a side effect of importing a module.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "partner"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" not in path.parts:
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def test_one_drf_exception_handler_and_no_view_brings_its_own():
    handlers, overrides = [], []
    for path, tree in _modules():
        name = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and [a.arg for a in node.args.args][:2] == ["exc", "context"]:
                handlers.append(f"{name}:{node.name}")
            if isinstance(node, ast.FunctionDef) and node.name == "get_exception_handler":
                overrides.append(f"{name}:{node.lineno}")
    assert handlers == ["partner/core/api.py:exception_handler"]
    assert overrides == [], "a view declares `error_shape` instead of its own handler"
    assert settings.REST_FRAMEWORK["EXCEPTION_HANDLER"] == "partner.core.api.exception_handler"


# Run in a process of its own: set up Django (each app's ready() fills its registries), then import
# every module of the project; a profile hook notes each call of a `*_register` function or of a
# signal's `connect` made by a module's body as it is imported (its top level, a loop there, a
# decorator such as Django's `@receiver`).
_PROBE = r"""
import importlib, json, pkgutil, sys

at_import, in_ready = [], set()


def watch(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    connects = code.co_name == "connect" and code.co_filename.endswith("dispatch/dispatcher.py")
    if not (code.co_name.endswith("_register") or connects):
        return
    caller = frame.f_back
    if connects and caller is not None and caller.f_code.co_name == "_decorator":
        caller = caller.f_back  # @receiver(...): the module that applies the decorator
    if caller is None or not caller.f_globals.get("__name__", "").startswith("partner"):
        return
    if caller.f_code.co_name == "<module>":
        at_import.append(f"{caller.f_globals['__name__']}:{caller.f_lineno} {frame.f_code.co_name}")
    elif caller.f_code.co_name == "ready":
        in_ready.add(frame.f_code.co_name)


sys.setprofile(watch)
import django

django.setup()
import partner

for module in pkgutil.walk_packages(partner.__path__, "partner."):
    if ".migrations" not in module.name:
        importlib.import_module(module.name)
sys.setprofile(None)
print(json.dumps({"at_import": at_import, "in_ready": sorted(in_ready)}))
"""


def test_no_registry_is_filled_at_import():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["at_import"] == [], "fill these in the app's AppConfig.ready()"
    # The hook saw the registries being filled where they should be.
    assert {"purges_register", "transactions_open_register", "lease_hand_back_register"} <= set(seen["in_ready"])
    assert {"health_warning_register", "metrics_collector_register", "connect"} <= set(seen["in_ready"])

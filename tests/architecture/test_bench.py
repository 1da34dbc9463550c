"""bench/ drives the application through its public surface (bench/README.md): HTTP, management commands
and settings, playing the platform with the sandbox. So no module of it imports the application's own
apps, imports inside functions included; the platform's side (partner.sandbox), the contract's
signatures (partner.platform.signatures, signing webhooks as the platform does) and the Celery app
(the worker's remote control, `celery control`) are what it may use.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ("partner.sandbox", "partner.platform.signatures", "config.celery", "config.settings")


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_bench_imports_nothing_of_the_application_but_the_platforms_side():
    offending = {}
    for path in sorted((ROOT / "bench").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        ours = {module for module in imported(path) if module.split(".")[0] in ("partner", "config")}
        wrong = sorted(module for module in ours if not module.startswith(ALLOWED))
        if wrong:
            offending[name] = wrong
    assert not offending, f"bench/ modules importing the application's internals: {offending}"

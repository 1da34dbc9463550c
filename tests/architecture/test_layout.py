"""The code's shape, as DESIGN.md and the README's layout describe it.

- Imports go down the layers only: core <- platform <- catalog <- fulfillment <- inbox, ui and connector,
  operations (the dashboard, health and metrics) on top beside them, the sandbox apart (it may use
  core and platform; no domain app imports it), and core imports nothing of the project's config.
  Imports inside functions count.
- Inside the fulfillment, imports go down too: the order and its state (`orders/`) at the bottom,
  the work on an order above it (`sending/`, `automated/`, `recovery/`, which use `orders/` and
  not each other), the staff's package (`staff/`) on top (it may use any of them; none of them uses
  it: the sender tells staff of a new order by an announcement the staff's package receives). All
  five stand on the package's ground (`models.py`, `enqueue.py`), never on the modules that drive
  them (`runs.py`, `tasks.py`, `handlers.py`, `admin.py`, `apps.py`).
- No import cycle between the project's modules.
- One module calls the HTTP session for outbound calls, `partner.core.outbound`: no other module
  (the sandbox apart: it plays the service) calls requests, httpx or urllib3 itself (by attribute or
  by a name imported from them), sends a request on a session, or imports urllib.request or
  http.client, so every call to another system gets the same timeouts, deadline,
  refused redirects, metrics and record of its tries.
- Modules are cut by what they are for: none is a grab bag named utils, helpers, misc, common or
  shared, and every module with code opens with a docstring saying what it is for.

There used to be caps of 400 lines a module and 60 a function. They were dropped: they made code
split where a file grew long rather than where its concern ended (a module in two halves named
for nothing, a function cut in pieces that only make sense together), and a length says nothing
about whether a module holds one thing. What keeps a module cohesive is that it has one purpose
it can state, and a place in the layers it cannot leave; review judges the rest.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "partner"

# What each layer may import of the project (besides itself).
ALLOWED = {
    "core": set(),
    "platform": {"core"},
    "catalog": {"core", "platform"},
    "fulfillment": {"core", "platform", "catalog"},
    "inbox": {"core", "platform", "catalog", "fulfillment"},
    "ui": {"core", "platform", "catalog", "fulfillment"},
    "connector": {"core", "platform", "catalog", "fulfillment"},
    "operations": {"core", "platform", "catalog", "fulfillment", "inbox"},
    "sandbox": {"core", "platform"},
}


def modules(*, with_config: bool = False) -> dict[str, Path]:
    found = {}
    paths = sorted(PACKAGE.rglob("*.py"))
    if with_config:
        paths += sorted((ROOT / "config").rglob("*.py"))
    for path in paths:
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path) -> set[str]:
    """Every module `name` imports (at the top or inside a function), absolute."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def project_imports() -> dict[str, set[str]]:
    known = modules(with_config=True)
    graph = {}
    for name, path in known.items():
        targets = set()
        for target in imported(name, path):
            # `from partner.x import y` names a module when y is one, else an attribute of x.
            while target and target not in known and target.startswith(("partner", "config")):
                target = target.rsplit(".", 1)[0] if "." in target else ""
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def layer(module: str) -> str:
    return module.split(".")[1] if module.startswith("partner.") and module.count(".") >= 1 else ""


def test_imports_go_down_the_layers_only():
    wrong = []
    for source, targets in project_imports().items():
        for target in targets:
            if target.startswith("config"):
                if layer(source) == "core":
                    wrong.append(f"{source} -> {target} (the bottom layer imports the project's config)")
                continue
            a, b = layer(source), layer(target)
            if a and b and a != b and b not in ALLOWED[a]:
                wrong.append(f"{source} -> {target}")
    # config/ may import anything; the check above also covers imports inside functions.
    assert wrong == []


# Inside partner.fulfillment: what each sub-package may import of the others, and the ground all stand on.
FULFILLMENT_ALLOWED = {
    "orders": set(),
    "sending": {"orders"},
    "automated": {"orders"},
    "recovery": {"orders"},
    "staff": {"orders", "sending", "automated", "recovery"},
}
FULFILLMENT_GROUND = {"models", "enqueue"}


def fulfillment_part(module: str) -> str | None:
    """The part of partner.fulfillment a module is in ("orders", "models", "runs", …); None outside it
    (and for the package's own __init__)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["partner", "fulfillment"] and len(parts) > 2 else None


def fulfillment_imports_wrong(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for source, targets in graph.items():
        a = fulfillment_part(source)
        if a not in FULFILLMENT_ALLOWED:
            continue
        for target in targets:
            b = fulfillment_part(target)
            if b is not None and b != a and b not in FULFILLMENT_ALLOWED[a] | FULFILLMENT_GROUND:
                wrong.append(f"{source} -> {target}")
    return sorted(wrong)


def test_inside_the_fulfillment_imports_go_down_from_staff_to_the_work_to_the_orders():
    assert fulfillment_imports_wrong(project_imports()) == []


def test_the_fulfillment_rule_sees_an_import_up():
    """The rule above, on a graph where it must refuse: the sender importing the staff's notices, the
    automated work the sender, the order's state a run."""
    graph = {
        "partner.fulfillment.sending.sender": {"partner.fulfillment.staff.notices", "partner.fulfillment.orders"},
        "partner.fulfillment.automated.pipeline": {"partner.fulfillment.sending.sender"},
        "partner.fulfillment.orders.services": {"partner.fulfillment.runs", "partner.fulfillment.models"},
        "partner.fulfillment.staff.services": {"partner.fulfillment.sending.sender", "partner.fulfillment.enqueue"},
    }
    assert fulfillment_imports_wrong(graph) == [
        "partner.fulfillment.automated.pipeline -> partner.fulfillment.sending.sender",
        "partner.fulfillment.orders.services -> partner.fulfillment.runs",
        "partner.fulfillment.sending.sender -> partner.fulfillment.staff.notices",
    ]


def test_no_import_cycle():
    graph = project_imports()
    state = {}
    cycles = []

    def visit(node, path):
        state[node] = "open"
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if state.get(target) == "open":
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node, [node])
    assert cycles == []


GRAB_BAGS = {"utils", "util", "helpers", "misc", "common", "shared"}


def test_no_module_is_a_grab_bag():
    named = [name for name in modules() if GRAB_BAGS & set(name.split("."))]
    assert named == [], "name a module for what it holds"


def test_every_module_says_what_it_is_for():
    silent = [
        name
        for name, path in modules().items()
        if path.read_text().strip() and not (ast.get_docstring(ast.parse(path.read_text())) or "").strip()
    ]
    assert silent == []


OUTBOUND = "partner.core.outbound"
HTTP_LIBRARIES = {"requests", "httpx", "urllib3"}
SESSION_CALLS = {"request", "get", "post", "put", "patch", "delete", "head", "options", "send", "urlopen"}
# Clients of the standard library, and callables of the libraries imported by name: none is needed
# outside the outbound module, and a call through them would escape the attribute check below.
HTTP_MODULES = {"urllib.request", "http.client"}


def outbound_calls_elsewhere(name: str, source: str) -> list[str]:
    """Where the module `name` (its `source`) sends HTTP itself rather than through OUTBOUND."""
    calling = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            calling += [f"{name}:{node.lineno} import {a.name}" for a in node.names if a.name in HTTP_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in HTTP_MODULES or any(f"{node.module}.{a.name}" in HTTP_MODULES for a in node.names):
                calling.append(f"{name}:{node.lineno} from {node.module} import …")
            elif node.module.split(".")[0] in HTTP_LIBRARIES:
                calling += [
                    f"{name}:{node.lineno} from {node.module} import {a.name}"
                    for a in node.names
                    if a.name in SESSION_CALLS
                ]
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        library = isinstance(owner, ast.Name) and owner.id in HTTP_LIBRARIES
        on_session = node.func.attr in SESSION_CALLS and "session" in ast.unparse(owner).lower()
        if library or on_session:
            calling.append(f"{name}:{node.lineno} {ast.unparse(node.func)}")
    return calling


def test_one_module_calls_the_http_session_for_outbound_calls():
    calling = []
    for name, path in modules().items():
        if name == OUTBOUND or layer(name) == "sandbox":
            continue
        calling += outbound_calls_elsewhere(name, path.read_text())
    assert calling == [], f"send through {OUTBOUND}"


def test_the_outbound_rule_sees_a_call_sent_around_it():
    """The rule above, on code it must refuse: a library's call, a session's, and a client imported by
    name or from the standard library; the outbound module's own helpers pass."""
    source = """
import requests
import urllib.request
from http import client
from requests import post
from partner.core import outbound

requests.post(url)
self.session.request("GET", url)
post(url)
outbound.exchange("GET", url, channel="x", session=outbound.pooled("api"), timeout=1)
"""
    assert [found.split(" ", 1)[1] for found in outbound_calls_elsewhere("m", source)] == [
        "import urllib.request",
        "from http import …",
        "from requests import post",
        "requests.post",
        "self.session.request",
    ]

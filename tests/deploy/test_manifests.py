"""compose.yaml and deploy/kubernetes/, offline: each valid against its schema, and in step with
the image (Containerfile, bin/entrypoint) and the application (its URLs, its tasks' time limits).

The schemas come from pinned packages (requirements/dev.txt): the compose specification's JSON
schema as check-jsonschema ships it, the Kubernetes OpenAPI schemas as kubernetes-validate ships
them (for the newest Kubernetes it knows).
"""

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from django.urls import Resolver404, resolve

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
KUBERNETES = ROOT / "deploy" / "kubernetes"
ENTRYPOINT = ROOT / "bin" / "entrypoint"
CONTAINERFILE = ROOT / "Containerfile"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def kubernetes_documents() -> list[dict]:
    """Every document of deploy/kubernetes/ and its folders (the Secret's example too)."""
    documents = []
    for path in sorted(KUBERNETES.rglob("*.yaml")):
        documents += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return documents


def of_kind(kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in kubernetes_documents() if doc["kind"] == kind}


def entrypoint_commands() -> set[str]:
    """The named commands of the image's entry point: the labels of its `case`."""
    return set(re.findall(r"^  ([a-z][a-z-]*)\)$", ENTRYPOINT.read_text(), flags=re.MULTILINE))


def exposed_port() -> int:
    return int(re.search(r"^EXPOSE (\d+)$", CONTAINERFILE.read_text(), flags=re.MULTILINE).group(1))


def image_volumes() -> list[str]:
    return json.loads(re.search(r"^VOLUME (\[.*\])$", CONTAINERFILE.read_text(), flags=re.MULTILINE).group(1))


def pod_specs() -> dict[str, dict]:
    """Each Deployment's and Job's pod spec, by name."""
    specs = {name: doc["spec"]["template"]["spec"] for name, doc in of_kind("Deployment").items()}
    specs.update({name: doc["spec"]["template"]["spec"] for name, doc in of_kind("Job").items()})
    return specs


def longest_task_seconds() -> int:
    """The longest hard time limit of any task the workers run (a task's own, or the default)."""
    from django.conf import settings

    from config.celery import app

    app.loader.import_default_modules()
    ours = [task for name, task in app.tasks.items() if not name.startswith("celery.")]
    assert ours, "no task registered"
    return max(task.time_limit or settings.CELERY_TASK_TIME_LIMIT for task in ours)


def seconds(duration: str) -> int:
    """A compose duration ("35s", "1h1m") in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    return sum(int(number) * units[unit] for number, unit in re.findall(r"(\d+)([hms])", duration))


# Valid against their schemas ------------------------------------------------------------------


def test_compose_file_is_valid_against_the_compose_specification():
    schema_text = (resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json").read_text()
    schema = json.loads(schema_text)
    jsonschema.validators.validator_for(schema)(schema).validate(compose())


def test_compose_schema_check_refuses_a_wrong_file():
    """The validation is real: a misspelt key is refused."""
    schema = json.loads(
        (resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json").read_text()
    )
    broken = compose()
    broken["services"]["web"]["comand"] = ["web"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validators.validator_for(schema)(schema).validate(broken)


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in KUBERNETES.rglob("*.yaml")))
def test_kubernetes_manifests_are_valid_against_the_openapi_schemas(path):
    version = kubernetes_validate.latest_version()
    for document in yaml.safe_load_all((ROOT / path).read_text()):
        if document:
            kubernetes_validate.validate(document, version, strict=True)


def test_kubernetes_schema_check_refuses_a_wrong_manifest():
    worker = of_kind("Deployment")["partner-worker"]
    worker["spec"]["template"]["spec"]["terminationGracePeriod"] = 60
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(worker, kubernetes_validate.latest_version(), strict=True)


# In step with the image ------------------------------------------------------------------------


def test_compose_and_kubernetes_run_only_the_commands_the_image_names():
    named = entrypoint_commands()
    assert {"web", "worker", "beat", "migrate", "healthcheck"} <= named
    for name, service in compose()["services"].items():
        if "image" in service and "partner" in service["image"]:
            assert service["command"][0] in named, (name, service["command"])
    for name, spec in pod_specs().items():
        for container in spec["containers"]:
            assert "command" not in container, f"{name} overrides the image's entry point"
            assert container["args"][0] in named, (name, container["args"])


def test_every_process_of_the_stack_is_there():
    services = compose()["services"]
    commands = {service["command"][0] for service in services.values() if "command" in service}
    assert {"web", "worker", "beat", "migrate"} <= commands
    assert {"db", "redis"} <= set(services)
    assert services["migrate"]["restart"] == "no"
    for process in ("web", "worker", "beat"):
        assert services[process]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"

    args = {spec["containers"][0]["args"][0]: name for name, spec in pod_specs().items()}
    assert set(args) == {"web", "worker", "beat", "migrate"}
    deployments = of_kind("Deployment")
    assert deployments[args["beat"]]["spec"]["replicas"] == 1
    assert deployments[args["beat"]]["spec"]["strategy"]["type"] == "Recreate"  # never two at once
    assert args["migrate"] in of_kind("Job")


def test_ports_and_probes_are_the_image_s_and_the_application_s():
    port = exposed_port()
    web = compose()["services"]["web"]
    assert web["environment"]["PORT"] == str(port)
    assert web["ports"][0].rsplit(":", 1)[1] == str(port)
    assert web["healthcheck"]["test"] == ["CMD", "/app/bin/entrypoint", "healthcheck"]
    assert "/healthz/live" in ENTRYPOINT.read_text()

    allowed_hosts = of_kind("ConfigMap")["partner-config"]["data"]["DJANGO_ALLOWED_HOSTS"].split(",")
    container = pod_specs()["partner-web"]["containers"][0]
    assert container["ports"][0]["containerPort"] == port
    env = {item["name"]: item["value"] for item in container.get("env", [])}
    assert env["PORT"] == str(port)
    probes = {kind: container[kind]["httpGet"] for kind in ("livenessProbe", "readinessProbe", "startupProbe")}
    assert probes["livenessProbe"]["path"] == "/healthz/live"
    assert probes["readinessProbe"]["path"] == "/healthz/ready"
    for probe in probes.values():
        assert probe["port"] in (port, container["ports"][0]["name"])
        try:
            resolve(probe["path"])
        except Resolver404:
            pytest.fail(f"{probe['path']} is not a URL of the application")
        hosts = [header["value"] for header in probe["httpHeaders"] if header["name"] == "Host"]
        assert hosts and hosts[0] in allowed_hosts  # any other Host is answered 400
    service = of_kind("Service")["partner-web"]
    assert service["spec"]["ports"][0]["targetPort"] in (port, container["ports"][0]["name"])


def test_what_is_written_is_in_the_folders_the_image_declares():
    volumes = image_volumes()
    for name in ("web", "worker", "beat"):
        service = compose()["services"][name]
        assert service["read_only"] is True
        mounted = [volume.split(":", 1)[1] for volume in service["volumes"]] + service["tmpfs"]
        assert sorted(mounted) == sorted(volumes), name
    for name, spec in pod_specs().items():
        container = spec["containers"][0]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, name
        mounted = {mount["mountPath"] for mount in container["volumeMounts"]}
        assert set(volumes) <= mounted, name
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        user = re.search(r"^USER (\d+):(\d+)$", CONTAINERFILE.read_text(), flags=re.MULTILINE)
        assert spec["securityContext"]["runAsUser"] == int(user.group(1)), name


# Stopping, sizes, secrets ----------------------------------------------------------------------


def test_a_stopping_worker_is_given_its_longest_task():
    longest = longest_task_seconds()
    assert longest > 150  # the full reconciliation's own limit, past the default
    worker_spec = pod_specs()["partner-worker"]
    assert worker_spec["terminationGracePeriodSeconds"] >= longest
    assert seconds(compose()["services"]["worker"]["stop_grace_period"]) >= longest


def test_every_process_asks_for_memory_and_the_worker_for_its_measured_size():
    for name, spec in pod_specs().items():
        resources_ = spec["containers"][0]["resources"]
        assert resources_["requests"]["memory"].endswith("Mi") and resources_["limits"]["memory"].endswith("Mi")
        assert int(resources_["limits"]["memory"][:-2]) > int(resources_["requests"]["memory"][:-2]), name
    worker = pod_specs()["partner-worker"]["containers"][0]
    threads = {item["name"]: item["value"] for item in worker["env"]}["CELERY_WORKER_CONCURRENCY"]
    assert int(threads) >= 1
    # Measured (docs/performance.md): the worker's one process with its 64 threads peaked at 204 MiB.
    assert int(worker["resources"]["requests"]["memory"][:-2]) >= 204
    for kind in ("web", "worker"):
        budgets = [
            pdb
            for pdb in of_kind("PodDisruptionBudget").values()
            if pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == kind
        ]
        assert len(budgets) == 1, kind


SECRET_NAMES = ("DJANGO_SECRET_KEY", "FIELD_ENCRYPTION_KEYS", "SVC_CLIENT_SECRET", "DATABASE_URL", "SVC_SIGNING")


def test_secrets_come_from_the_secret_and_nowhere_else():
    secret = of_kind("Secret")["partner-secrets"]
    assert {"DJANGO_SECRET_KEY", "FIELD_ENCRYPTION_KEYS", "SVC_CLIENT_SECRET"} <= set(secret["stringData"])
    config = of_kind("ConfigMap")["partner-config"]["data"]
    assert not [key for key in config if key.startswith(SECRET_NAMES)]
    for name, spec in pod_specs().items():
        container = spec["containers"][0]
        assert {"secretRef": {"name": "partner-secrets"}} in container["envFrom"], name
        assert not [item for item in container.get("env", []) if item["name"].startswith(SECRET_NAMES)], name
    # compose: the secrets from the env file, none written in compose.yaml itself.
    for name, service in compose()["services"].items():
        if "partner" in service.get("image", ""):
            assert service["env_file"] == ["partner.env"], name
            assert not [key for key in service["environment"] if key.startswith(SECRET_NAMES[:3])], name


def test_no_process_holds_a_capability_a_cluster_token_or_unfiltered_system_calls():
    for name in ("migrate", "web", "worker", "beat"):
        service = compose()["services"][name]
        assert service["cap_drop"] == ["ALL"] and "no-new-privileges:true" in service["security_opt"], name
    for name, spec in pod_specs().items():
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert spec["containers"][0]["securityContext"]["capabilities"]["drop"] == ["ALL"], name

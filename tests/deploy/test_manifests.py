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
COMPOSE_ENV_EXAMPLE = ROOT / "deploy" / "partner.env.example"
KUBERNETES_ENV_EXAMPLE = KUBERNETES / "secrets" / "partner-secrets.env.example"
ENV_EXAMPLE = ROOT / ".env.example"
CELERY_SETTINGS = ROOT / "config" / "settings" / "celery.py"
DOCUMENTS = "/app/documents"  # where web and worker mount the documents volume on compose


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


def entrypoint_case(command: str) -> str:
    """What the entry point runs for `command`: the lines of its `case` branch."""
    pattern = rf"^  {command}\)\n(.*?)\n    ;;$"
    return re.search(pattern, ENTRYPOINT.read_text(), flags=re.MULTILINE | re.DOTALL).group(1)


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
    assert {"web", "worker", "sender", "beat", "migrate", "healthcheck"} <= named
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
    assert {"web", "worker", "sender", "beat", "migrate"} <= commands
    assert {"db", "redis"} <= set(services)
    assert services["migrate"]["restart"] == "no"
    for process in ("web", "worker", "sender", "beat"):
        assert services[process]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"

    args = {spec["containers"][0]["args"][0]: name for name, spec in pod_specs().items()}
    assert set(args) == {"web", "worker", "sender", "beat", "migrate", "check"}  # check: the preflight Job
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
    for name in ("web", "worker", "sender", "beat"):
        service = compose()["services"][name]
        assert service["read_only"] is True
        mounted = [volume.split(":", 1)[1] for volume in service["volumes"]] + service["tmpfs"]
        # Besides the image's own folders, web and worker mount the shared documents volume.
        assert sorted(path for path in mounted if path != DOCUMENTS) == sorted(volumes), name
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


def test_the_sender_is_a_worker_of_the_events_queue_alone_its_probes_ping_it_and_its_sends_may_finish():
    """bin/entrypoint's `sender` (and the Procfile's) is the worker's `--sender` under a node name of its
    own, which compose's and Kubernetes' probes ping (the host's worker is celery@<host>); a stop gives
    it its one task's hard time limit."""
    from django.conf import settings

    from config.celery import EVENTS_TASK, app

    case = entrypoint_case("sender")
    assert "exec celery -A config worker --sender " in case and '--hostname "sender@%h"' in case
    procfile = dict(line.split(": ", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line)
    assert "celery -A config worker --sender " in procfile["sender"] and "--hostname=sender@%h" in procfile["sender"]
    assert "--sender" not in procfile["worker"] and "--sender" not in entrypoint_case("worker")

    service = compose()["services"]["sender"]
    assert "--destination sender@$$HOSTNAME" in service["healthcheck"]["test"][1]
    pod = pod_specs()["partner-sender"]
    container = pod["containers"][0]
    assert '--destination "sender@$HOSTNAME"' in container["livenessProbe"]["exec"]["command"][-1]
    assert container["image"] == pod_specs()["partner-worker"]["containers"][0]["image"]
    assert "env" not in container  # no CELERY_WORKER_CONCURRENCY: its threads are its own

    app.loader.import_default_modules()
    limit = app.tasks[EVENTS_TASK].time_limit or settings.CELERY_TASK_TIME_LIMIT
    assert pod["terminationGracePeriodSeconds"] >= limit
    assert seconds(service["stop_grace_period"]) >= limit


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


# A deployment filled in as written ----------------------------------------------------------------


def env_file(path: Path) -> dict[str, str]:
    """NAME=value lines of an env file (comments and blank lines skipped; a double-quoted value
    unquoted, as compose reads it)."""
    values = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, value = line.partition("=")
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        values[name.strip()] = value
    return values


def known_variables() -> set[str]:
    """Every variable .env.example documents (set or commented out)."""
    return set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), flags=re.MULTILINE))


def check_deploy(env: dict) -> list[str]:
    """`manage.py check --deploy` under exactly `env`: the lines of our errors (each with its id)."""
    from tests.helpers.processes import manage_check_deploy

    _code, output = manage_check_deploy(env)
    return [line for line in output.splitlines() if "(partner.E" in line]


# Asked for only through another: its default is the token path of SVC_BASE_URL.
DERIVED = {"SVC_TOKEN_URL"}


def preflight_variables() -> set[str]:
    """The variables the preflight asks for when a production deployment sets nothing: those each of
    its errors is about (the names that open its message)."""
    errors = check_deploy({"DJANGO_SETTINGS_MODULE": "config.settings.production"})
    subjects = [re.match(r"\?: \(partner\.E\d+\) ((?:[A-Z][A-Z0-9_]+(?:, )?)+)", line) for line in errors]
    named = {name for match in subjects if match for name in match.group(1).split(", ")}
    asked = (named & known_variables()) - DERIVED
    assert {"DJANGO_SECRET_KEY", "EMAIL_URL", "PARTNER_NAME", "DOCUMENT_STORAGE"} <= asked, errors
    return asked


def filled_in(values: dict[str, str]) -> dict[str, str]:
    """An example as a person fills it in: each empty value given one of its kind; the rest as written."""
    import secrets

    from cryptography.fernet import Fernet

    kinds = {
        "FIELD_ENCRYPTION_KEYS": lambda: Fernet.generate_key().decode(),
        "PARTNER_NAME": lambda: "Ridgeline Appraisal Co.",  # spaces, as a company's name has
        "PARTNER_EMAIL": lambda: "orders@ridgeline.example",
        "EMAIL_URL": lambda: "smtp+tls://partner:mail-password-1@smtp.partner.example:587",
        "SVC_CLIENT_ID": lambda: "partner-client-7c1d",
    }
    optional = ("PARTNER_FAX", "PARTNER_CONTACT_NAME", "PARTNER_CONTACT_ROLE")  # may stay empty
    return {
        name: value or ("" if name in optional else kinds.get(name, lambda: secrets.token_urlsafe(50))())
        for name, value in values.items()
    }


SHELL_VALUES = {"POSTGRES_PASSWORD": "db-password-1", "REDIS_PASSWORD": "redis-password-1"}


def shell_filled(value: str) -> str:
    """A compose value with its `${NAME:?message}` filled in from the shell, as compose does."""
    return re.sub(r"\$\{(\w+):\?[^}]*\}", lambda match: SHELL_VALUES[match.group(1)], value)


def compose_environment() -> dict[str, str]:
    """What a compose app container reads: partner.env (from the example) under compose.yaml's own."""
    environment = {**compose()["services"]["web"]["environment"]}
    # `${POSTGRES_PASSWORD:?...}` and `${REDIS_PASSWORD:?...}` as compose fills them in from the shell.
    environment = {name: shell_filled(str(value)) for name, value in environment.items()}
    return {**filled_in(env_file(COMPOSE_ENV_EXAMPLE)), **environment}


def kubernetes_environment() -> dict[str, str]:
    """What a pod reads: the ConfigMap and the Secret made from the env example, in a pod."""
    config = of_kind("ConfigMap")["partner-config"]["data"]
    return {**filled_in(config), **filled_in(env_file(KUBERNETES_ENV_EXAMPLE)), "KUBERNETES_SERVICE_HOST": "10.96.0.1"}


@pytest.mark.parametrize("where", ["compose", "kubernetes"])
def test_every_variable_the_preflight_asks_for_is_in_the_example(where):
    provided = compose_environment() if where == "compose" else kubernetes_environment()
    missing = preflight_variables() - set(provided)
    assert not missing, f"{where}: the examples lack {sorted(missing)}"


@pytest.mark.parametrize("where", ["compose", "kubernetes"])
def test_the_examples_filled_in_as_written_pass_the_preflight(where):
    """Every blank filled in, nothing else changed: `check --deploy` names no problem of ours."""
    env = compose_environment() if where == "compose" else kubernetes_environment()
    assert check_deploy(env) == []


def test_the_kubernetes_secret_example_and_its_env_file_name_the_same_keys():
    secret = of_kind("Secret")["partner-secrets"]["stringData"]
    assert set(secret) == set(env_file(KUBERNETES_ENV_EXAMPLE))
    config = of_kind("ConfigMap")["partner-config"]["data"]
    assert config["DOCUMENT_STORAGE"] == "s3" and config["DOCUMENTS_S3_BUCKET"]  # each pod has its own disk


def test_web_and_worker_share_one_documents_volume_on_compose():
    services = compose()["services"]
    mounts = {
        name: [volume for volume in services[name]["volumes"] if volume.endswith(f":{DOCUMENTS}")]
        for name in ("web", "worker")
    }
    assert mounts["web"] == mounts["worker"] and len(mounts["web"]) == 1, mounts
    volume = mounts["web"][0].split(":", 1)[0]
    assert volume in compose()["volumes"] and not volume.startswith(("/", "."))  # a named volume, not a host path
    assert services["web"]["environment"]["MEDIA_ROOT"] == DOCUMENTS
    assert f"/app/documents && chown partner:partner /app/var {DOCUMENTS}" in CONTAINERFILE.read_text()


def test_the_preflight_job_runs_the_check_with_what_the_pods_read():
    job = of_kind("Job")["partner-check"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["check"]
    web = pod_specs()["partner-web"]["containers"][0]
    assert container["envFrom"] == web["envFrom"]


def test_values_with_spaces_are_quoted_in_the_env_examples():
    for path in (COMPOSE_ENV_EXAMPLE, KUBERNETES_ENV_EXAMPLE):
        for line in path.read_text().splitlines():
            if line.startswith("#") or "=" not in line:
                continue
            value = line.partition("=")[2]
            assert " " not in value or (value.startswith('"') and value.endswith('"')), f"{path.name}: {line}"
    assert " " not in "".join(env_file(KUBERNETES_ENV_EXAMPLE).values())  # kubectl would keep the quotes


def test_one_figure_for_the_worker_threads():
    """The settings' default, compose's and Kubernetes' worker, .env.example and the docs say one number.
    The default is config/settings/celery.py's, as production reads it (the test settings run their workers smaller)."""
    pattern = r'CELERY_WORKER_CONCURRENCY = env\.int\("CELERY_WORKER_CONCURRENCY", default=(\d+)\)'
    default = re.search(pattern, CELERY_SETTINGS.read_text())
    threads = default.group(1)
    assert compose()["services"]["worker"]["environment"]["CELERY_WORKER_CONCURRENCY"] == threads
    worker = pod_specs()["partner-worker"]["containers"][0]
    assert {item["name"]: item["value"] for item in worker["env"]}["CELERY_WORKER_CONCURRENCY"] == threads
    assert f"# CELERY_WORKER_CONCURRENCY={threads}\n" in ENV_EXAMPLE.read_text()
    said = re.findall(r"CELERY_WORKER_CONCURRENCY=?`? threads \((\d+)", (ROOT / "docs" / "deployment.md").read_text())
    assert said == [threads], said


def test_no_process_holds_a_capability_a_cluster_token_or_unfiltered_system_calls():
    for name in ("migrate", "web", "worker", "sender", "beat"):
        service = compose()["services"][name]
        assert service["cap_drop"] == ["ALL"] and "no-new-privileges:true" in service["security_opt"], name
    for name, spec in pod_specs().items():
        assert spec["automountServiceAccountToken"] is False, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert spec["containers"][0]["securityContext"]["capabilities"]["drop"] == ["ALL"], name


def test_compose_s_redis_asks_every_client_for_its_password():
    redis = compose()["services"]["redis"]
    command = [shell_filled(part) for part in redis["command"]]
    assert command[command.index("--requirepass") + 1] == SHELL_VALUES["REDIS_PASSWORD"]
    assert shell_filled(redis["environment"]["REDISCLI_AUTH"]) == SHELL_VALUES["REDIS_PASSWORD"]
    environment = compose_environment()
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL"):
        assert environment[name].startswith(f"redis://:{SHELL_VALUES['REDIS_PASSWORD']}@redis:6379/"), name


def test_only_the_ingress_controller_and_monitoring_reach_the_pods_and_they_reach_only_their_services():
    import ipaddress

    policies = of_kind("NetworkPolicy")
    ingress, egress = policies["partner-ingress"]["spec"], policies["partner-egress"]["spec"]
    for spec in (ingress, egress):
        assert spec["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "partner"}}
    (allowed,) = ingress["ingress"]
    assert allowed["ports"] == [{"protocol": "TCP", "port": exposed_port()}]
    namespaces = [rule["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for rule in allowed["from"]]
    assert namespaces == ["ingress-nginx", "monitoring"]
    ports = sorted({port["port"] for rule in egress["egress"] for port in rule["ports"]})
    assert ports == [53, 443, 587, 5432, 6379]
    # The proxies believed and the scrapers let in: the pod network, not a whole private range.
    config = of_kind("ConfigMap")["partner-config"]["data"]
    for name in ("TRUSTED_PROXIES", "METRICS_ALLOWED_NETWORKS"):
        assert all(ipaddress.ip_network(net).prefixlen >= 16 for net in config[name].split(",")), name

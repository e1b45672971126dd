"""Getting files out of pods: a tar stream over exec (what ``kubectl cp`` does) and the collector
container that keeps a finished workload pod around until its files are copied.

The tar is written by the pod's own Python (``tarfile``), not by a ``tar``
binary: Python is the one thing the broker and Locust images are guaranteed
to contain, and the stream needs nothing writable in the pod.

Workload Jobs (rendered by :mod:`scotbed.workloads.k8s`) opt in to file
collection by annotating their pod template with ``scotbed.io/collect-dir:
<path>``, where ``<path>`` is a volume mount (an emptyDir) of their container
laid out like the run directory (``events/``, ``locust/``, ...; file names
unique across pods, e.g. carrying the pod name). :func:`add_collector` adds a
small container to such pods that mounts the same volume and sleeps until the
backend has copied the files and written ``.collected`` (or a bounded hold
time passes), so the files outlive the workload container's exit without a
PersistentVolume, and the Job completes by itself once they are out.
"""

from __future__ import annotations

import copy
import posixpath
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

COLLECT_ANNOTATION = "scotbed.io/collect-dir"
COLLECTOR = "scotbed-collector"
COLLECTED_MARKER = ".collected"
#: how long the collector container outlives the workload's timeout when nobody collects (a crashed
#: orchestrator): the Job then finishes on its own
COLLECT_GRACE_S = 300.0

_TAR_SCRIPT = (
    "import os, sys, tarfile\n"
    "d = sys.argv[1]\n"
    "with tarfile.open(fileobj=sys.stdout.buffer, mode='w|') as t:\n"
    "    for n in sorted(os.listdir(d)):\n"
    "        if not n.startswith('.'):\n"
    "            t.add(os.path.join(d, n), arcname=n)\n"
)

_HOLD_SCRIPT = (
    "import os, sys, time\n"
    "marker, limit = sys.argv[1], float(sys.argv[2])\n"
    "end = time.monotonic() + limit\n"
    "while not os.path.exists(marker) and time.monotonic() < end:\n"
    "    time.sleep(1)\n"
)


@dataclass
class Collected:
    """What copying pods' directories wrote (the files, in the run directory) and what went wrong (one
    line per problem, naming the pod)."""

    written: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def tar_command(directory: str) -> list[str]:
    """argv that writes ``directory``'s files (dotfiles excluded) as an uncompressed tar to stdout."""
    return ["python", "-c", _TAR_SCRIPT, directory]


def marker_command(directory: str) -> list[str]:
    """argv that tells the collector container the files are out."""
    return ["python", "-c", "import sys; open(sys.argv[1], 'w').close()", f"{directory}/{COLLECTED_MARKER}"]


def extract(fileobj: IO[bytes], dest: Path) -> tuple[list[Path], list[str]]:
    """Regular files of a tar stream into ``dest``; returns (written, skipped with the reason).

    The archive comes from a pod, so names are checked: no absolute paths, no ``..``, no links or
    devices, and a file that already exists is never overwritten (two pods with the same file name
    would otherwise silently lose one's events).
    """
    written: list[Path] = []
    skipped: list[str] = []
    with tarfile.open(fileobj=fileobj, mode="r|") as tar:
        for member in tar:
            name = posixpath.normpath(member.name)
            if member.isdir():
                continue
            parts = PurePosixPath(name).parts
            if not member.isfile() or name.startswith("/") or ".." in parts or name == ".":
                skipped.append(f"{member.name}: not a regular file inside the directory")
                continue
            target = dest.joinpath(*parts)
            if target.exists():
                skipped.append(f"{member.name}: {target} already exists")
                continue
            src = tar.extractfile(member)
            if src is None:
                skipped.append(f"{member.name}: unreadable")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
            written.append(target)
    return written, skipped


def collect_dir(pod_template: dict[str, Any]) -> str | None:
    annotations = pod_template.get("metadata", {}).get("annotations", {}) or {}
    value = annotations.get(COLLECT_ANNOTATION)
    return str(value).rstrip("/") if value else None


def annotate_collect(job: dict[str, Any], directory: str) -> dict[str, Any]:
    """A copy of ``job`` annotated to collect ``directory`` when one of its containers mounts it and it
    names no collect dir itself (Jobs that do not mount it are returned unchanged)."""
    if job.get("kind") != "Job":
        return job
    template = job.get("spec", {}).get("template", {})
    if collect_dir(template) is not None:
        return job
    mounts = [
        m.get("mountPath", "").rstrip("/")
        for c in template.get("spec", {}).get("containers", [])
        for m in c.get("volumeMounts", [])
    ]
    if directory.rstrip("/") not in mounts:
        return job
    out = copy.deepcopy(job)
    meta = out["spec"]["template"].setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), COLLECT_ANNOTATION: directory.rstrip("/")}
    return out


def add_collector(job: dict[str, Any], hold_s: float) -> dict[str, Any]:
    """A copy of ``job`` whose pods get the collector container (jobs without the annotation unchanged).

    The collector reuses the first container's image (it has Python) and security context (so it
    passes the namespace's restricted Pod Security level) and mounts the volume that container
    mounts at the collect dir.
    """
    if job.get("kind") != "Job":
        return job
    template = job.get("spec", {}).get("template", {})
    directory = collect_dir(template)
    if directory is None:
        return job
    out = copy.deepcopy(job)
    pod_spec = out["spec"]["template"]["spec"]
    containers = pod_spec["containers"]
    if any(c.get("name") == COLLECTOR for c in containers):
        return out
    mount = next(
        (
            m
            for c in containers
            for m in c.get("volumeMounts", [])
            if m.get("mountPath", "").rstrip("/") == directory
        ),
        None,
    )
    if mount is None:
        name = job.get("metadata", {}).get("name", "?")
        raise ValueError(
            f"Job {name}: annotation {COLLECT_ANNOTATION}={directory} names no volume mount of its containers"
        )
    main = containers[0]
    collector: dict[str, Any] = {
        "name": COLLECTOR,
        "image": main["image"],
        "imagePullPolicy": main.get("imagePullPolicy", "IfNotPresent"),
        "command": ["python", "-c", _HOLD_SCRIPT, f"{directory}/{COLLECTED_MARKER}", str(int(hold_s))],
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"cpu": "200m", "memory": "128Mi"},
        },
        "volumeMounts": [{"name": mount["name"], "mountPath": directory}],
    }
    if "securityContext" in main:
        collector["securityContext"] = copy.deepcopy(main["securityContext"])
    containers.append(collector)
    return out

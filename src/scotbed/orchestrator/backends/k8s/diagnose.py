"""Why a pod is not Ready, in words a user can act on; pure functions over the client's model objects.

The Kubernetes API scatters the answer: scheduling failures live in the
PodScheduled condition and in FailedScheduling events, image problems in a
container's waiting reason, crashes in its terminated state or in
CrashLoopBackOff, probe failures only in Unhealthy events. This module reads
them all and says which problems will not fix themselves (``fatal``), so the
wait can stop early instead of running into its timeout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

IMAGE_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
CONFIG_REASONS = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError")
#: image pull problems that no retry can fix
IMAGE_FATAL = ("InvalidImageName", "ErrImageNeverPull")
#: pod phases in which every container has exited
FINISHED_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class PodProblem:
    pod: str
    kind: str  # unschedulable | image | crash | config | not-ready | pending | gone
    message: str
    fatal: bool  # will not fix itself: the wait stops at once
    log_container: str | None = None  # attach this container's last log lines
    log_previous: bool = False  # ... of its previous (crashed) instance


def is_ready(pod: Any) -> bool:
    conds = (pod.status.conditions if pod.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conds)


def _events_for(pod: str, events: Iterable[Any]) -> list[Any]:
    """The pod's events, oldest first (events without timestamps keep their order)."""
    mine = [
        e
        for e in events
        if e.involved_object is not None
        and e.involved_object.name == pod
        and (e.involved_object.kind in (None, "Pod"))
    ]
    stamped = [e for e in mine if (e.last_timestamp or e.event_time) is not None]
    if len(stamped) == len(mine):
        mine.sort(key=lambda e: e.last_timestamp or e.event_time)
    return mine


def _latest(events: Sequence[Any], reason: str) -> str | None:
    for e in reversed(events):
        if e.reason == reason and e.message:
            return str(e.message).strip()
    return None


def scheduling_hint(message: str) -> str:
    """What to do about a scheduler message."""
    low = message.lower()
    if "anti-affinity" in low:
        return (
            "required anti-affinity keeps a broker off its neighbours' nodes, so the overlay needs "
            "as many schedulable nodes as its chromatic need: add worker nodes or use "
            "--preferred-anti-affinity"
        )
    if "insufficient" in low:
        return (
            "the nodes lack free CPU or memory for the pods' requests: add nodes or lower the requests "
            "(--pod-cpu 50m)"
        )
    if "taint" in low:
        return "the remaining nodes carry taints the broker does not tolerate (e.g. the control plane)"
    return ""


def pod_problem(pod: Any, events: Iterable[Any] = ()) -> PodProblem | None:
    """The reason ``pod`` is not Ready, or None when it is."""
    name = pod.metadata.name
    if is_ready(pod):
        return None
    evs = _events_for(name, events)
    status = pod.status
    phase = status.phase if status else None
    if phase in FINISHED_PHASES:
        crashed = _terminated_container(pod)
        if crashed is not None:
            cname, term = crashed
            msg = f"container {cname} exited with code {term.exit_code}" + (
                f" ({term.reason})" if term.reason else ""
            )
            return PodProblem(name, "crash", msg, True, log_container=cname)
        reason = " ".join(x for x in (status.reason, status.message) if x) or "no reason given"
        return PodProblem(name, "crash", f"pod {phase}: {reason}", True)
    for cs in _all_statuses(pod):
        waiting = cs.state.waiting if cs.state else None
        if waiting is None:
            continue
        reason = waiting.reason or ""
        detail = (waiting.message or "").strip()
        if reason in IMAGE_REASONS:
            msg = f"{reason} for image {cs.image!r}" + (f": {detail}" if detail else "")
            msg += (
                "; on kind load it with `kind load docker-image IMAGE --name CLUSTER`, on minikube with "
                "`minikube image load IMAGE`, on the local cluster run `make local-cluster` again (it "
                "builds the broker and workload images into the node's Docker engine); the pods use "
                "imagePullPolicy IfNotPresent"
            )
            return PodProblem(name, "image", msg, reason in IMAGE_FATAL)
        if reason == "CrashLoopBackOff":
            msg = f"container {cs.name} is in CrashLoopBackOff after {cs.restart_count} restart(s)"
            last = cs.last_state.terminated if cs.last_state else None
            if last is not None:
                msg += f"; last exit code {last.exit_code}" + (f" ({last.reason})" if last.reason else "")
            return PodProblem(name, "crash", msg, True, log_container=cs.name, log_previous=True)
        if reason in CONFIG_REASONS:
            return PodProblem(name, "config", f"{reason}: {detail or 'no detail'}", True)
    for cs in _containers(pod):
        term = cs.state.terminated if cs.state else None
        if term is not None:
            msg = f"container {cs.name} exited with code {term.exit_code}" + (
                f" ({term.reason})" if term.reason else ""
            )
            return PodProblem(name, "crash", msg, True, log_container=cs.name)
    sched = _condition(pod, "PodScheduled")
    if sched is not None and sched.status == "False":
        message = (sched.message or "").strip() or _latest(evs, "FailedScheduling") or "no message"
        return _unschedulable(name, message)
    if not pod.spec or not pod.spec.node_name:
        failed = _latest(evs, "FailedScheduling")
        if failed:
            return _unschedulable(name, failed)
        return PodProblem(name, "pending", "Pending, waiting for the scheduler", False)
    if any(cs.state and cs.state.running for cs in _containers(pod)):
        probe = _latest(evs, "Unhealthy")
        msg = "running, readiness probe not passing" + (f": {probe}" if probe else " yet")
        return PodProblem(name, "not-ready", msg, False)
    warning = next((e for e in reversed(evs) if e.type == "Warning" and e.message), None)
    where = f" on node {pod.spec.node_name}"
    if warning is not None:
        return PodProblem(name, "pending", f"starting{where}: {warning.reason}: {warning.message}", False)
    return PodProblem(name, "pending", f"starting{where} (containers being created)", False)


def dead_reason(pod: Any) -> str | None:
    """Why a pod that was running no longer counts as a live broker: terminated, restarted or deleted."""
    if pod.metadata.deletion_timestamp is not None:
        return "pod is being deleted"
    term = _terminated_container(pod)
    if term is not None:
        cname, t = term
        return f"container {cname} exited with code {t.exit_code}" + (f" ({t.reason})" if t.reason else "")
    phase = pod.status.phase if pod.status else None
    if phase in FINISHED_PHASES:
        reason = " ".join(x for x in (pod.status.reason, pod.status.message) if x)
        return f"pod {phase}" + (f": {reason}" if reason else "")
    for cs in _all_statuses(pod):
        # rare with restartPolicy Never, but a broker that came back has lost its routing tables
        if (cs.restart_count or 0) > 0:
            last = cs.last_state.terminated if cs.last_state else None
            why = f"; last exit code {last.exit_code}" if last is not None else ""
            return f"container {cs.name} restarted {cs.restart_count} time(s){why} (routing state lost)"
    return None


def describe(problems: Sequence[PodProblem], logs: Mapping[str, str] | None = None, tail: int = 10) -> str:
    """One block per pod, with the last log lines where they were fetched."""
    lines = []
    for p in sorted(problems, key=lambda p: p.pod):
        lines.append(f"  {p.pod}: {p.message}")
        log = (logs or {}).get(p.pod, "").rstrip("\n")
        if log:
            lines.append("    last log lines:")
            lines += [f"      {line}" for line in log.splitlines()[-tail:]]
    return "\n".join(lines)


def _all_statuses(pod: Any) -> list[Any]:
    st = pod.status
    if st is None:
        return []
    return list(st.init_container_statuses or []) + list(st.container_statuses or [])


def _containers(pod: Any) -> list[Any]:
    """Statuses of the regular containers (a finished init container is normal, not a crash)."""
    return list((pod.status.container_statuses if pod.status else None) or [])


def _terminated_container(pod: Any) -> tuple[str, Any] | None:
    for cs in _containers(pod):
        term = cs.state.terminated if cs.state else None
        if term is not None:
            return cs.name, term
    return None


def _condition(pod: Any, kind: str) -> Any | None:
    for c in (pod.status.conditions if pod.status else None) or []:
        if c.type == kind:
            return c
    return None


def _unschedulable(name: str, message: str) -> PodProblem:
    """A pod the scheduler could not place, with the scheduler's message and the hint for it."""
    hint = scheduling_hint(message)
    return PodProblem(
        name, "unschedulable", f"Pending, not scheduled: {message}" + (f" -> {hint}" if hint else ""), False
    )

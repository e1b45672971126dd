"""Which nodes broker pods may use beyond anti-affinity: a node pool's labels and the taints it carries.

Clusters often keep experiments on dedicated nodes, labelled and tainted so nothing else lands
there; the brokers then need that pool's ``nodeSelector`` and a toleration of its taint. The same
rules (Kubernetes' own matching of tolerations to taints) decide which nodes the backend counts
when it checks that the cluster has enough nodes for the anti-affinity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: taint effects that keep a pod off a node (PreferNoSchedule only lowers its score)
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Placement:
    """``node_selector``: labels a node must carry; ``tolerations``: Kubernetes toleration objects."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Mapping[str, Any]] = ()

    def pod_spec(self) -> dict[str, Any]:
        """The pod spec fields (none when the placement is the default)."""
        out: dict[str, Any] = {}
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        return out

    def admits(self, labels: Mapping[str, str], taints: Sequence[Mapping[str, str | None]]) -> bool:
        """Whether a node with these labels and taints ({key, value, effect}) can take a broker pod."""
        if any(labels.get(k) != v for k, v in self.node_selector.items()):
            return False
        blocking = [t for t in taints if t.get("effect") in BLOCKING_EFFECTS]
        return all(any(tolerates(tol, t) for tol in self.tolerations) for t in blocking)


#: the default: any node without a blocking taint
ANYWHERE = Placement()


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str | None]) -> bool:
    """Kubernetes' rule: an empty key with Exists matches every taint; else keys match and, with the
    Equal operator (the default), values too; an empty effect matches every effect."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    return operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or "")

"""The simulated scheduler's filters that read the other pods (devcluster/kubelet/placement.py,
interpod.py, spread.py, hostports.py): where a pod with required inter-pod (anti-)affinity,
topology spread constraints or host ports may go, and kube-scheduler's reasons where not."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.devcluster.apiserver.kinds import labelkeys
from kubetrain.devcluster.gang.resources import Resources, resources
from kubetrain.devcluster.kubelet import fit
from kubetrain.devcluster.kubelet.nodeobjects import NODE_CAPACITY
from kubetrain.devcluster.kubelet.placement import Placement, PodIndex

Obj = dict[str, Any]

ANTI = "node(s) didn't match pod anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
PORTS = "node(s) didn't have free ports for the requested pod ports"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str | None = None, **spec: Any) -> Obj:
    labels = {HOST: name, **({ZONE: zone} if zone else {})}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


def pod(
    name: str, labels: dict[str, str] | None = None, ns: str = "ns", priority: int = 0, **spec: Any
) -> Obj:
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels or {}}
    return {"metadata": meta, "spec": {"containers": [{"name": "main"}], "priority": priority, **spec}}


def term(key: str = HOST, **selector: Any) -> Obj:
    return {"labelSelector": selector or {"matchLabels": {"app": "a"}}, "topologyKey": key}


def anti(*terms: Obj) -> Obj:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def affinity(*terms: Obj) -> Obj:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def spread(key: str = ZONE, skew: int = 1, **extra: Any) -> list[Obj]:
    c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"}
    return [{**c, "labelSelector": {"matchLabels": {"app": "a"}}, **extra}]


def index(*placed: tuple[Obj, str]) -> PodIndex:
    out = PodIndex()
    for p, at in placed:
        out.put(p["metadata"]["uid"], at, p)
    return out


def free(nodes: list[Obj]) -> dict[str, Resources]:
    return {n["metadata"]["name"]: resources(NODE_CAPACITY) for n in nodes}


def reasons(p: Obj, nodes: list[Obj], idx: PodIndex, ns_labels: Obj | None = None) -> dict[str, list[str]]:
    others = Placement(p, nodes, idx, ns_labels or {}, fit.node_matches)
    return fit.filter_nodes(p, nodes, free(nodes), others)


NODES = [node("n0", "a"), node("n1", "a"), node("n2", "b"), node("n3", "b")]
A = {"app": "a"}


def test_required_anti_affinity_on_hostname_keeps_one_matching_pod_per_node() -> None:
    me = pod("w2", A, affinity=anti(term()))
    idx = index((pod("w0", A), "n0"), (pod("w1", A), "n1"), (pod("other", {"app": "b"}), "n2"))
    assert reasons(me, NODES, idx) == {"n0": [ANTI], "n1": [ANTI], "n2": [], "n3": []}
    # a zone-wide term keeps the whole zone away
    assert reasons(pod("w2", A, affinity=anti(term(ZONE))), NODES, idx) == {
        "n0": [ANTI],
        "n1": [ANTI],
        "n2": [],
        "n3": [],
    }
    # a pod of another namespace is not matched by a term without namespaces
    assert reasons(pod("w2", A, ns="other", affinity=anti(term())), NODES, idx) == {
        n: [] for n in ["n0", "n1", "n2", "n3"]
    }


def test_an_existing_pods_anti_affinity_keeps_a_matching_pod_off_its_topology() -> None:
    idx = index((pod("w0", {"app": "b"}, affinity=anti(term(ZONE))), "n2"))
    assert reasons(pod("x", A), NODES, idx) == {"n0": [], "n1": [], "n2": [EXISTING], "n3": [EXISTING]}
    assert reasons(pod("x", {"app": "c"}), NODES, idx) == {n: [] for n in ["n0", "n1", "n2", "n3"]}


def test_required_affinity_goes_where_a_matching_pod_is_and_the_first_of_a_group_anywhere() -> None:
    me = pod("w1", A, affinity=affinity(term(ZONE)))
    assert reasons(me, NODES, index((pod("w0", A), "n3"))) == {
        "n0": [AFFINITY],
        "n1": [AFFINITY],
        "n2": [],
        "n3": [],
    }
    # nothing matches yet and the pod matches its own term: the first pod goes anywhere
    assert reasons(me, NODES, index()) == {n: [] for n in ["n0", "n1", "n2", "n3"]}
    # a pod that does not match its own term waits for one that does
    lonely = pod("x", {"app": "z"}, affinity=affinity(term(ZONE)))
    assert reasons(lonely, NODES, index()) == {n: [AFFINITY] for n in ["n0", "n1", "n2", "n3"]}
    # a node without the term's topology key never passes
    bare = [{"metadata": {"name": "bare", "labels": {}}}]
    assert reasons(me, bare, index((pod("w0", A), "bare"))) == {"bare": [AFFINITY]}


def test_namespaces_and_namespace_selector_choose_whose_pods_count() -> None:
    idx = index((pod("w0", A, ns="team"), "n0"))
    listed = term(HOST) | {"namespaces": ["team"]}
    assert reasons(pod("x", A, affinity=anti(listed)), NODES[:2], idx) == {"n0": [ANTI], "n1": []}
    by_label = term(HOST) | {"namespaceSelector": {"matchLabels": {"tier": "gold"}}}
    assert reasons(pod("x", A, affinity=anti(by_label)), NODES[:2], idx, {"team": {"tier": "gold"}}) == {
        "n0": [ANTI],
        "n1": [],
    }
    assert reasons(pod("x", A, affinity=anti(by_label)), NODES[:2], idx, {"team": {}}) == {"n0": [], "n1": []}
    everywhere = term(HOST) | {"namespaceSelector": {}}
    assert reasons(pod("x", A, affinity=anti(everywhere)), NODES[:2], idx) == {"n0": [ANTI], "n1": []}


def test_topology_spread_max_skew_counts_matching_pods_per_zone() -> None:
    me = pod("w2", A, topologySpreadConstraints=spread())
    idx = index((pod("w0", A), "n0"), (pod("w1", A), "n1"), (pod("w9", A, ns="other"), "n2"))
    # zone a has 2, zone b 0 (another namespace's pod does not count): only zone b within skew 1
    assert reasons(me, NODES, idx) == {"n0": [SPREAD], "n1": [SPREAD], "n2": [], "n3": []}
    assert reasons(pod("w2", A, topologySpreadConstraints=spread(skew=3)), NODES, idx) == {
        n: [] for n in ["n0", "n1", "n2", "n3"]
    }
    # ScheduleAnyway only scores: not a filter
    soft = [{**spread()[0], "whenUnsatisfiable": "ScheduleAnyway"}]
    assert reasons(pod("w2", A, topologySpreadConstraints=soft), NODES, idx) == {
        n: [] for n in ["n0", "n1", "n2", "n3"]
    }


def test_topology_spread_missing_label_min_domains_and_node_policies() -> None:
    me = pod("w1", A, topologySpreadConstraints=spread())
    bare = {"metadata": {"name": "bare", "labels": {}}}
    idx = index((pod("w0", A), "n0"))
    assert reasons(me, [NODES[0], bare], idx) == {"n0": [], "bare": [f"{SPREAD} (missing required label)"]}
    # one zone, minDomains 2: the global minimum is 0, so a second pod there exceeds maxSkew 1
    lone = pod("w1", A, topologySpreadConstraints=spread(minDomains=2))
    assert reasons(lone, NODES[:2], idx) == {"n0": [SPREAD], "n1": [SPREAD]}
    assert reasons(me, NODES[:2], idx) == {"n0": [], "n1": []}
    # a zone the pod's node selector excludes is no domain (nodeAffinityPolicy Honor by default) ...
    pinned = pod("w1", A, topologySpreadConstraints=spread(), nodeSelector={ZONE: "a"})
    assert reasons(pinned, NODES, idx)["n0"] == []
    # ... unless the constraint ignores node affinity: then empty zone b makes zone a too full
    ignoring = pod(
        "w1", A, topologySpreadConstraints=spread(nodeAffinityPolicy="Ignore"), nodeSelector={ZONE: "a"}
    )
    assert reasons(ignoring, NODES, idx)["n0"] == [SPREAD]
    # a tainted zone counts unless nodeTaintsPolicy is Honor
    tainted = [NODES[0], node("t", "b", taints=[{"key": "k", "effect": "NoSchedule"}])]
    assert reasons(me, tainted, idx)["n0"] == [SPREAD]
    honor = pod("w1", A, topologySpreadConstraints=spread(nodeTaintsPolicy="Honor"))
    assert reasons(honor, tainted, idx)["n0"] == []


def test_host_ports_conflict_on_protocol_port_and_address() -> None:
    def ported(name: str, port: int, ip: str = "", protocol: str = "TCP") -> Obj:
        p = pod(name)
        p["spec"]["containers"][0]["ports"] = [
            {"containerPort": port, "hostPort": port, "protocol": protocol, **({"hostIP": ip} if ip else {})}
        ]
        return p

    idx = index((ported("a", 23456), "n0"), (ported("b", 5000, ip="10.0.0.1"), "n1"))
    assert reasons(ported("x", 23456), NODES[:2], idx) == {"n0": [PORTS], "n1": []}
    assert reasons(ported("x", 23456, protocol="UDP"), NODES[:2], idx) == {"n0": [], "n1": []}
    assert reasons(ported("x", 5000, ip="10.0.0.2"), NODES[:2], idx) == {"n0": [], "n1": []}
    assert reasons(ported("x", 5000), NODES[:2], idx) == {"n0": [], "n1": [PORTS]}


def test_fit_error_names_the_reasons_and_which_preemption_could_help() -> None:
    me = pod("w4", A, affinity=anti(term()) | affinity(term(ZONE)))
    idx = index(*((pod(f"w{i}", A), f"n{i}") for i in range(3)))
    others = Placement(me, NODES, idx, {}, fit.node_matches)
    why = fit.filter_nodes(me, NODES, free(NODES), others)
    assert why == {"n0": [ANTI], "n1": [ANTI], "n2": [ANTI], "n3": []}
    crowded = NODES[:3]
    others = Placement(me, crowded, idx, {}, fit.node_matches)
    why = fit.filter_nodes(me, crowded, free(crowded), others)
    assert fit.fit_error(me, why, free(crowded), {}, others) == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )
    # pod affinity failing is UnschedulableAndUnresolvable: preemption is not helpful there
    loner = pod("x", {"app": "z"}, affinity=affinity(term(ZONE, matchLabels={"app": "q"})))
    why = reasons(loner, crowded, idx)
    assert fit.fit_error(loner, why, free(crowded), {}) == (
        "0/3 nodes are available: 3 node(s) didn't match pod affinity rules. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_the_preemption_dry_run_reruns_the_filters_without_the_lower_priority_pods() -> None:
    low, keep = pod("low", {"app": "b"}, priority=0), pod("keep", A, priority=10)
    me = pod("me", A, priority=10, affinity=anti(term()))
    nodes = NODES[:1]
    full = free(nodes)
    full["n0"]["pods"] = full["n0"]["pods"] * 0  # no pod slot left: NodeResourcesFit fails first
    idx = index((low, "n0"))
    others = Placement(me, nodes, idx, {}, fit.node_matches)
    why = fit.filter_nodes(me, nodes, full, others)
    assert why == {"n0": ["Too many pods"]}
    # with `low` gone the pod would fit: kube-scheduler would preempt it; the message keeps the reason
    assert fit.fit_error(me, why, full, {"n0": [low]}, others) == (
        "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 Too many pods."
    )
    # with `low` gone its slot is free, but `keep` (no victim: same priority) matches the anti-affinity
    idx.put(keep["metadata"]["uid"], "n0", keep)
    others = Placement(me, nodes, idx, {}, fit.node_matches)
    assert fit.fit_error(me, why, full, {"n0": [low, keep]}, others) == (
        "0/1 nodes are available: 1 Too many pods. "
        "preemption: 0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."
    )


def test_the_index_forgets_pods_that_leave() -> None:
    idx = index((pod("w0", A, affinity=anti(term())), "n0"))
    assert len(idx) == 1 and idx.anti
    idx.put("uid-ns-w0", "n1", pod("w0", A))  # moved, without anti-affinity now
    assert list(idx.pods) == ["n1"] and not idx.anti
    idx.drop("uid-ns-w0")
    assert len(idx) == 0 and not idx.pods


def test_label_keys_are_merged_into_the_selectors_as_the_api_server_does_on_create() -> None:
    keyed = term() | {"matchLabelKeys": ["run", "absent"], "mismatchLabelKeys": ["team"]}
    unselected = {"topologyKey": HOST, "matchLabelKeys": ["run"]}
    p = pod("x", {"run": "r1", "team": "t"}, affinity=anti(keyed, unselected))
    p["spec"]["affinity"]["podAffinity"] = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": copy.deepcopy(keyed)}
        ]
    }
    p["spec"]["topologySpreadConstraints"] = spread(matchLabelKeys=["run"])
    labelkeys.apply_label_keys(p)
    merged = [
        {"key": "run", "operator": "In", "values": ["r1"]},
        {"key": "team", "operator": "NotIn", "values": ["t"]},
    ]
    required = p["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required[0]["labelSelector"] == {"matchLabels": {"app": "a"}, "matchExpressions": merged}
    assert required[0]["matchLabelKeys"] == ["run", "absent"]  # the key lists stay as written
    assert "labelSelector" not in required[1]  # no selector: it matches nothing, nothing is added
    preferred = p["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert preferred["podAffinityTerm"]["labelSelector"]["matchExpressions"] == merged
    assert p["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] == merged[:1]

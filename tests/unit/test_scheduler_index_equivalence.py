"""The simulated scheduler's cache (devcluster/kubelet/podindex.py) gives the filters that read the
other pods exactly what a plain scan of every pod gives: over seeded random small clusters —
pods put, moved, relabelled, marked for deletion and dropped while the cache's counts are kept —
the PreFilter states of PodTopologySpread and InterPodAffinity, every node's reasons, and the
FailedScheduling message with its preemption dry run equal those of a straightforward reference
(kube-scheduler's PreFilter as written: every existing pod matched against every term)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kubetrain.devcluster.gang.resources import Resources, resources
from kubetrain.devcluster.kubelet import fit, hostports, interpod, podindex, spread
from kubetrain.devcluster.kubelet.interpod import Labels, labels_of, namespace_of, required_terms
from kubetrain.devcluster.kubelet.nodeobjects import NODE_CAPACITY
from kubetrain.devcluster.kubelet.placement import IndexCounts, Placement, PodIndex

Obj = dict[str, Any]
Placed = dict[str, tuple[str, Obj]]  # uid -> (node, pod)
HOST, ZONE, RACK = "kubernetes.io/hostname", "topology.kubernetes.io/zone", "rack"
NAMESPACES = ["ns1", "ns2", "ns3"]
KEYS = {"app": ["a", "b", "c"], "role": ["x", "y"]}


# The reference: every existing pod scanned at every attempt, as kube-scheduler's PreFilter reads.


def _on(placed: Placed, node: str, gone: frozenset[str]) -> list[Obj]:
    return [p for uid, (at, p) in placed.items() if at == node and uid not in gone]


def _inc(counts: dict[tuple[str, str], int], node_labels: Labels, key: str) -> None:
    if key in node_labels:
        pair = (key, str(node_labels[key]))
        counts[pair] = counts.get(pair, 0) + 1


def reference_interpod(
    pod: Obj, nodes: list[Obj], placed: Placed, ns_labels: dict[str, Labels], gone: frozenset[str]
) -> interpod.State | None:
    state = interpod.State(
        pod, required_terms(pod, "podAffinity"), required_terms(pod, "podAntiAffinity"), ns_labels
    )
    found = False
    for node in nodes:
        name, node_labels = node["metadata"]["name"], labels_of(node)
        for other in _on(placed, name, gone):
            for term in required_terms(other, "podAntiAffinity"):
                found = True
                if term.matches(pod, ns_labels):
                    _inc(state.existing_anti_counts, node_labels, term.topology_key)
            if state.affinity and all(t.matches(other, ns_labels) for t in state.affinity):
                for term in state.affinity:
                    _inc(state.affinity_counts, node_labels, term.topology_key)
            for term in state.anti:
                if term.matches(other, ns_labels):
                    _inc(state.anti_counts, node_labels, term.topology_key)
    return state if found or state.affinity or state.anti else None


def reference_spread(pod: Obj, nodes: list[Obj], placed: Placed, gone: frozenset[str]) -> spread.State | None:
    def matching(namespace: str, selector: Any) -> Any:
        def count(node: str) -> int:
            return sum(
                1
                for p in _on(placed, node, gone)
                if not p["metadata"].get("deletionTimestamp")
                and namespace_of(p) == namespace
                and interpod.selector_matches(selector, labels_of(p))
            )

        return count

    return spread.prefilter(pod, nodes, matching, fit.node_matches)


class Reference:
    """`fit.Others` by plain scans."""

    def __init__(
        self, pod: Obj, nodes: list[Obj], placed: Placed, ns_labels: dict[str, Labels], gone: frozenset[str]
    ) -> None:
        self.pod, self.nodes, self.placed, self.ns_labels, self.gone = pod, nodes, placed, ns_labels, gone
        self.spread = reference_spread(pod, nodes, placed, gone)
        self.interpod = reference_interpod(pod, nodes, placed, ns_labels, gone)
        self.by_name = {n["metadata"]["name"]: n for n in nodes}

    def before_fit(self, node: str) -> str | None:
        used = [port for p in _on(self.placed, node, self.gone) for port in hostports.host_ports(p)]
        return hostports.REASON if hostports.conflicts(hostports.host_ports(self.pod), used) else None

    def after_fit(self, node: str) -> str | None:
        obj = self.by_name[node]
        why = spread.reason(self.spread, obj) if self.spread is not None else None
        if why is None and self.interpod is not None:
            why = interpod.reason(self.interpod, obj)
        return why

    def without(self, uids: frozenset[str]) -> Reference:
        return Reference(self.pod, self.nodes, self.placed, self.ns_labels, uids)


# Random small clusters.


def _selector(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.05:
        return None  # matches nothing
    if roll < 0.1:
        return {}  # matches everything (a spread constraint: counts nothing)
    out: Obj = {}
    if rng.random() < 0.6:
        key = rng.choice(list(KEYS))
        out["matchLabels"] = {key: rng.choice(KEYS[key])}
    if rng.random() < 0.6 or not out:
        exprs = []
        for _ in range(rng.randint(1, 2)):
            key, op = rng.choice(list(KEYS)), rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
            values = rng.sample(KEYS[key], rng.randint(1, len(KEYS[key]))) if op in ("In", "NotIn") else []
            exprs.append({"key": key, "operator": op, **({"values": values} if values else {})})
        out["matchExpressions"] = exprs
    return out


def _term(rng: random.Random) -> Obj:
    term: Obj = {"labelSelector": _selector(rng), "topologyKey": rng.choice([HOST, HOST, ZONE, RACK])}
    roll = rng.random()
    if roll < 0.2:
        term["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    elif roll < 0.3:
        term["namespaceSelector"] = {}
    elif roll < 0.4:
        term["namespaceSelector"] = {"matchLabels": {"tier": rng.choice(["gold", "silver"])}}
    if "labelSelector" in term and term["labelSelector"] is None:
        del term["labelSelector"]
    return term


def _pod(rng: random.Random, uid: str, terms: float) -> Obj:
    labels = {k: rng.choice(v) for k, v in KEYS.items() if rng.random() < 0.7}
    meta: Obj = {"name": uid, "namespace": rng.choice(NAMESPACES), "uid": uid, "labels": labels}
    if rng.random() < 0.1:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: Obj = {"containers": [{"name": "main"}], "priority": rng.choice([0, 0, 10])}
    affinity: Obj = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < terms:
            required = [_term(rng) for _ in range(rng.randint(1, 2))]
            if rng.random() < 0.1:
                required.append(required[0])  # a repeated term counts twice
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": required}
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < terms:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": rng.randint(1, 2),
                "topologyKey": rng.choice([HOST, ZONE, ZONE, RACK]),
                "whenUnsatisfiable": rng.choice(["DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"]),
                **({"labelSelector": s} if (s := _selector(rng)) is not None else {}),
                **({"minDomains": 3} if rng.random() < 0.2 else {}),
            }
            for _ in range(rng.randint(1, 2))
        ]
    if rng.random() < 0.15:
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": rng.choice([80, 81])}]
    return {"metadata": meta, "spec": spec}


def _nodes(rng: random.Random) -> list[Obj]:
    nodes = []
    for i in range(rng.randint(1, 6)):
        labels = {HOST: f"n{i}"} if rng.random() < 0.9 else {}
        if rng.random() < 0.8:
            labels[ZONE] = rng.choice(["a", "b", "c"])
        if rng.random() < 0.3:
            labels[RACK] = rng.choice(["r1", "r2"])
        node: Obj = {"metadata": {"name": f"n{i}", "labels": labels}, "spec": {}}
        if rng.random() < 0.15:
            node["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
        nodes.append(node)
    return nodes


def _free(nodes: list[Obj]) -> dict[str, Resources]:
    return {n["metadata"]["name"]: resources(NODE_CAPACITY) for n in nodes}


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    return vars(a) == vars(b)


def check(rng: random.Random, index: PodIndex, placed: Placed, nodes: list[Obj]) -> None:
    ns_labels: dict[str, Labels] = {ns: {"tier": rng.choice(["gold", "silver"])} for ns in NAMESPACES[:2]}
    pod = _pod(rng, "incoming", terms=0.6)
    gone = frozenset(rng.sample(sorted(placed), min(len(placed), rng.randint(0, 3))))
    counts = IndexCounts(index, ns_labels, gone)
    expected = reference_interpod(pod, nodes, placed, ns_labels, gone)
    assert _same(interpod.prefilter(pod, nodes, counts, ns_labels), expected)
    expected_spread = reference_spread(pod, nodes, placed, gone)
    assert _same(spread.prefilter(pod, nodes, counts.spread, fit.node_matches), expected_spread)
    free = _free(nodes)
    indexed = Placement(pod, nodes, index, ns_labels, fit.node_matches)
    reference = Reference(pod, nodes, placed, ns_labels, frozenset())
    reasons = fit.filter_nodes(pod, nodes, free, indexed)
    assert reasons == fit.filter_nodes(pod, nodes, free, reference)
    bound: dict[str, list[Obj]] = {}
    for at, p in placed.values():
        bound.setdefault(at, []).append(p)
    if not any(not why for why in reasons.values()):  # the message, and its preemption dry run
        assert fit.fit_error(pod, reasons, free, bound, indexed) == fit.fit_error(
            pod, reasons, free, bound, reference
        )


def run(seed: int) -> None:
    rng = random.Random(seed)
    nodes = _nodes(rng)
    where = [n["metadata"]["name"] for n in nodes] + ["gone-node"]  # a node no longer listed
    index, made = PodIndex(), 0
    placed: Placed = {}
    for _ in range(rng.randint(1, 40)):
        roll = rng.random()
        if roll < 0.55 or not placed:  # a new pod
            uid, made = f"u{made}", made + 1
            pod = _pod(rng, uid, terms=0.3)
        elif roll < 0.75:  # the same pod relabelled, marked for deletion, or moved
            uid = rng.choice(sorted(placed))
            pod = placed[uid][1]
            pod = {**pod, "metadata": {**pod["metadata"]}}
            if rng.random() < 0.5:
                pod["metadata"]["labels"] = {k: rng.choice(v) for k, v in KEYS.items() if rng.random() < 0.7}
            if rng.random() < 0.3:
                pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        elif roll < 0.85:  # the same version again (a status update)
            uid = rng.choice(sorted(placed))
            pod = placed[uid][1]
        else:
            uid = rng.choice(sorted(placed))
            index.drop(uid)
            del placed[uid]
            continue
        node = rng.choice(where) if uid not in placed or rng.random() < 0.3 else placed[uid][0]
        index.put(uid, node, pod)
        placed[uid] = (node, pod)
        if rng.random() < 0.3:  # an attempt now: its counts are kept through what follows
            check(rng, index, placed, nodes)
    assert len(index) == len(placed)
    for _ in range(3):
        check(rng, index, placed, nodes)


def test_the_indexed_filters_equal_a_scan_of_every_pod_over_random_clusters() -> None:
    for seed in range(400):
        run(seed)


def test_the_same_with_few_kept_tallies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(podindex, "MAX_TALLIES", 2)  # counts dropped and rebuilt between attempts
    for seed in range(400, 600):
        run(seed)


def test_the_index_forgets_what_leaves_and_keeps_one_group_per_term() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": HOST}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    index = PodIndex()
    for i in range(5):
        meta = {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}", "labels": {"app": "a"}}
        index.put(f"u{i}", f"n{i % 2}", {"metadata": meta, "spec": {"affinity": anti}})
    (group,) = index.anti_groups()  # five pods, one distinct term
    assert group.total == {"n0": 3, "n1": 2} and group.holders("n0", frozenset({"u0"})) == 2
    tally = index.tally(({"matchLabels": {"app": "a"}},), live_only=False)
    assert tally.members == {"n0": {"ns": {"u0", "u2", "u4"}}, "n1": {"ns": {"u1", "u3"}}}
    for i in range(5):
        index.drop(f"u{i}")
    assert not list(index.anti_groups()) and not tally.members and len(index) == 0

"""JobSet's exclusive placement for a TrainJob (`alpha.jobset.sigs.k8s.io/exclusive-topology`),
pure: the leader's affinities as JobSet's pod webhook writes them (held to its Go test
expectations, pkg/webhooks/pod_webhook_test.go `TestDefault`), followers held until their leader
is scheduled and then given its node's domain, a leader's node without the label told, followers
outside a recreated leader's domain deleted, and the node-selector strategy's selector and
toleration (jobset_controller.go `constructJob`)."""

from __future__ import annotations

import copy
from typing import Any

from trainjobs import RUNTIME, UID

from kubetrain.jobs import jobsetplacement as exclusive
from kubetrain.jobs.trainjob.children import jobset_spec
from kubetrain.kube.cache import Cache
from kubetrain.kube.clock import SYSTEM_CLOCK
from kubetrain.kube.resources import PODS
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.trainedge import plan_trainjob
from kubetrain.operator.trainjobs import TrainJobs, slim_priority_class

from .test_trainplan import NOW, snapshot, trainjob

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
API_VERSION = "trainer.kubeflow.org/v1alpha1"
KEY0 = "jobset.sigs.k8s.io/job-key"
PRIORITY = "jobset.sigs.k8s.io/priority"


def webhook_leader() -> Obj:
    """The leader pod of pod_webhook_test.go's "leader pod with exclusive placement"."""
    return {
        "metadata": {
            "name": "p-leader",
            "labels": {KEY0: "js-rjob-0"},
            "annotations": {
                "jobset.sigs.k8s.io/jobset-name": "js",
                "alpha.jobset.sigs.k8s.io/exclusive-topology": ZONE,
                "batch.kubernetes.io/job-completion-index": "0",
                "jobset.sigs.k8s.io/replicatedjob-name": "rjob",
                "jobset.sigs.k8s.io/job-index": "0",
            },
        },
        "spec": {"priority": 100},
    }


def test_the_leaders_affinities_are_jobsets() -> None:
    """pod_webhook_test.go "leader pod with exclusive placement": the priority label, a required
    podAffinity to its own job and a required podAntiAffinity to other jobs of its priority,
    both on the topology key with an empty namespaceSelector."""
    pod = webhook_leader()
    exclusive.apply(pod, "default", "js-rjob-0")
    assert pod["metadata"]["labels"] == {KEY0: "js-rjob-0", "jobset.sigs.k8s.io/priority": "100"}
    assert pod["spec"] == {
        "priority": 100,
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [{"key": KEY0, "operator": "In", "values": ["js-rjob-0"]}]
                        },
                        "topologyKey": ZONE,
                        "namespaceSelector": {},
                    }
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": KEY0, "operator": "Exists"},
                                {"key": KEY0, "operator": "NotIn", "values": ["js-rjob-0"]},
                                {"key": "jobset.sigs.k8s.io/priority", "operator": "In", "values": ["100"]},
                            ]
                        },
                        "topologyKey": ZONE,
                        "namespaceSelector": {},
                    }
                ]
            },
        },
    }


def test_the_templates_own_required_terms_are_kept_before_jobsets() -> None:
    """setExclusiveAffinities appends to the pod's own required terms; preferred ones stay."""
    pod = webhook_leader()
    own = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    preferred = [{"weight": 1, "podAffinityTerm": own}]
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [own],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        },
        "nodeAffinity": {"x": 1},
    }
    exclusive.apply(pod, "default", "js-rjob-0")
    anti = pod["spec"]["affinity"]["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][0] == own
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][1]["topologyKey"] == ZONE
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    assert pod["spec"]["affinity"]["nodeAffinity"] == {"x": 1}
    assert len(pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]) == 1


def test_a_pod_without_exclusive_placement_or_of_the_node_selector_strategy_gets_no_affinity() -> None:
    """pod_webhook_test.go "using node selector strategy" and "not a jobset pod": untouched by
    the webhook (the node-selector strategy is the JobSet controller's, below)."""
    pod = webhook_leader()
    del pod["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"]
    before = copy.deepcopy(pod)
    exclusive.apply(pod, "default", "js-rjob-0")
    assert pod == before
    assert exclusive.topology_key(pod) is None


def test_the_replicated_jobs_annotation_wins_with_its_own_node_selector_flag() -> None:
    """labelAndAnnotateObject: the JobSet's annotation (and its node-selector flag), then the
    replicated job template's, which wins."""
    js = {exclusive.EXCLUSIVE_KEY: "rack", exclusive.NODE_SELECTOR_STRATEGY_KEY: "true", "other": "x"}
    assert exclusive.placement_annotations(js, {}) == {
        exclusive.EXCLUSIVE_KEY: "rack",
        exclusive.NODE_SELECTOR_STRATEGY_KEY: "true",
    }
    assert exclusive.placement_annotations(
        {exclusive.EXCLUSIVE_KEY: "rack"}, {exclusive.EXCLUSIVE_KEY: "pool"}
    ) == {exclusive.EXCLUSIVE_KEY: "pool"}
    assert exclusive.placement_annotations({}, {exclusive.NODE_SELECTOR_STRATEGY_KEY: "true"}) == {}


# --- through the planner ----------------------------------------------------------------------
def runtime(annotations: Obj) -> Obj:
    """torch-distributed with `annotations` on its JobSet template metadata."""
    out = copy.deepcopy(RUNTIME)
    out["spec"]["template"].setdefault("metadata", {})["annotations"] = annotations
    return out


EXCLUSIVE = runtime({exclusive.EXCLUSIVE_KEY: ZONE})


def plan(
    pods: list[Obj],
    nodes: dict[str, Obj],
    rt: Obj = EXCLUSIVE,
    nodes_count: int = 3,
    old: Obj | None = None,
    classes: exclusive.PriorityClasses | None = None,
) -> Any:
    job = trainjob(nodes_count)
    if old is not None:
        job["status"] = old
    observed = Observed(
        pods=pods,
        service={"metadata": {"name": "tj"}},
        extra=[snapshot(job, rt)],
        node=nodes.get,
        priority_classes=lambda: classes,
    )
    return plan_trainjob(job, observed, rt, NOW, PlannerConfig())


def node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def running(pod: Obj, node_name: str = "") -> Obj:
    out = copy.deepcopy(pod)
    out["metadata"]["ownerReferences"][0]["uid"] = UID
    out["spec"]["nodeName"] = node_name
    out["status"] = {"phase": "Running" if node_name else "Pending"}
    return out


def names(pods: list[Obj]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_the_leader_is_made_first_with_its_affinities_the_followers_once_it_is_scheduled() -> None:
    first = plan([], {})
    assert names(first.create_pods) == ["tj-node-0-0"]  # the followers wait for their leader
    [leader] = first.create_pods
    labels, annotations = leader["metadata"]["labels"], leader["metadata"]["annotations"]
    assert annotations[exclusive.EXCLUSIVE_KEY] == ZONE and labels["jobset.sigs.k8s.io/priority"] == "0"
    [together] = leader["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert together["labelSelector"]["matchExpressions"][0]["values"] == [labels[KEY0]]
    # created, not scheduled yet: still no follower
    assert plan([running(leader)], {}).create_pods == []
    # scheduled on a node of zone-a: the followers follow it there
    nodes = {"n1": node("n1", **{ZONE: "zone-a"})}
    p = plan([running(leader, "n1")], nodes)
    assert names(p.create_pods) == ["tj-node-0-1", "tj-node-0-2"]
    for follower in p.create_pods:
        assert follower["spec"]["nodeSelector"] == {ZONE: "zone-a"}
        assert "affinity" not in follower["spec"]
        assert follower["metadata"]["labels"]["jobset.sigs.k8s.io/priority"] == "0"
    assert not any(c["type"] == "ExclusivePlacementBlocked" for c in p.status.get("conditions") or [])


def test_a_finished_or_terminating_leader_places_no_follower() -> None:
    """leaderPodForFollower: a leader being deleted, Succeeded or Failed is no leader."""
    leader = running(plan([], {}).create_pods[0], "n1")
    nodes = {"n1": node("n1", **{ZONE: "zone-a"})}
    gone = copy.deepcopy(leader)
    gone["metadata"]["deletionTimestamp"] = "2026-11-25T12:00:00Z"
    assert plan([gone], nodes).create_pods == []
    done = copy.deepcopy(leader)
    done["status"]["phase"] = "Succeeded"
    assert not any(p["metadata"]["name"].endswith(("-1", "-2")) for p in plan([done], nodes).create_pods)


def test_a_leaders_node_without_the_topology_label_is_a_condition_and_an_event() -> None:
    leader = running(plan([], {}).create_pods[0], "n1")
    p = plan([leader], {"n1": node("n1", other="x")})
    assert p.create_pods == []
    [cond] = [c for c in p.status["conditions"] if c["type"] == "ExclusivePlacementBlocked"]
    assert cond["status"] == "True" and cond["reason"] == "NodeMissingTopologyLabel"
    assert f"node n1 has no label {ZONE}" in cond["message"]
    [event] = [e for e in p.events if e.reason == "NodeMissingTopologyLabel"]
    assert event.type == "Warning" and "n1" in event.message and ZONE in event.message
    # told once: the same condition again is no new event
    again = plan([leader], {"n1": node("n1", other="x")}, old=p.status)
    assert not [e for e in again.events if e.reason == "NodeMissingTopologyLabel"]
    # labelled: the followers are made and the condition goes
    fixed = plan([leader], {"n1": node("n1", **{ZONE: "zone-b"})}, old=p.status)
    assert names(fixed.create_pods) == ["tj-node-0-1", "tj-node-0-2"]
    assert not any(c["type"] == "ExclusivePlacementBlocked" for c in fixed.status.get("conditions") or [])


def test_followers_outside_a_recreated_leaders_domain_are_deleted_to_follow_it() -> None:
    """pod_controller.go: a scheduled leader whose followers select another domain (it was made
    again elsewhere) has every follower of its job deleted; made again in its domain after."""
    nodes = {"n1": node("n1", **{ZONE: "zone-a"}), "n2": node("n2", **{ZONE: "zone-b"})}
    leader = running(plan([], {}).create_pods[0], "n1")
    followers = [running(f, "n1") for f in plan([leader], nodes).create_pods]
    settled = plan([leader, *followers], nodes)
    assert settled.delete_pods == [] and settled.create_pods == []
    moved = copy.deepcopy(leader)
    moved["spec"]["nodeName"] = "n2"  # the leader made again, now in zone-b
    p = plan([moved, *followers], nodes)
    assert sorted(p.delete_pods) == ["tj-node-0-1", "tj-node-0-2"]
    assert [e.reason for e in p.events if e.type == "Warning"] == ["ExclusivePlacementViolation"]
    again = plan([moved], nodes)
    assert {f["spec"]["nodeSelector"][ZONE] for f in again.create_pods} == {"zone-b"}
    # followers without the annotation (made before the placement was applied, by an earlier
    # kubetrain) are not the placement's: left as they run (JobSet's pod index skips them too)
    unplaced = copy.deepcopy(followers)
    for f in unplaced:
        del f["metadata"]["annotations"][exclusive.EXCLUSIVE_KEY]
    assert plan([moved, *unplaced], nodes).delete_pods == []


def test_a_finished_follower_is_not_moved_to_a_recreated_leaders_domain() -> None:
    """A follower that Succeeded holds no place in a domain (the scheduler counts no finished
    pod) and its work is done: under JobSet the pod controller deletes it too, but the Job
    controller has counted its completion index and makes no pod for it again. It is kept, and
    only the live followers move; with every follower finished nothing is deleted."""
    nodes = {"n1": node("n1", **{ZONE: "zone-a"}), "n2": node("n2", **{ZONE: "zone-b"})}
    leader = running(plan([], {}).create_pods[0], "n1")
    followers = [running(f, "n1") for f in plan([leader], nodes).create_pods]
    done = copy.deepcopy(followers)
    for f in done:
        f["status"]["phase"] = "Succeeded"
    moved = copy.deepcopy(leader)
    moved["spec"]["nodeName"] = "n2"  # the leader failed and was made again, now in zone-b
    p = plan([moved, done[0], followers[1]], nodes)
    assert p.delete_pods == ["tj-node-0-2"]
    assert [e.reason for e in p.events if e.type == "Warning"] == ["ExclusivePlacementViolation"]
    p = plan([moved, *done], nodes)
    assert p.delete_pods == [] and p.create_pods == []
    assert [e.reason for e in p.events if e.type == "Warning"] == []


def test_the_node_selector_strategy_selects_the_namespaced_job_and_tolerates_its_taint() -> None:
    """constructJob with the node-selector flag: every pod at once, nodeSelector
    `alpha.jobset.sigs.k8s.io/namespaced-job: <ns>_<job>` and the no-schedule toleration;
    no affinity, no priority label (the webhook skips these pods)."""
    rt = runtime({exclusive.EXCLUSIVE_KEY: ZONE, exclusive.NODE_SELECTOR_STRATEGY_KEY: "true"})
    p = plan([], {}, rt=rt)
    assert names(p.create_pods) == ["tj-node-0-0", "tj-node-0-1", "tj-node-0-2"]
    for pod in p.create_pods:
        assert pod["spec"]["nodeSelector"] == {"alpha.jobset.sigs.k8s.io/namespaced-job": "ns_tj-node-0"}
        assert pod["spec"]["tolerations"][-1] == {
            "key": "alpha.jobset.sigs.k8s.io/no-schedule",
            "operator": "Exists",
            "effect": "NoSchedule",
        }
        assert (
            "affinity" not in pod["spec"] and "jobset.sigs.k8s.io/priority" not in pod["metadata"]["labels"]
        )


def test_a_runtime_without_the_annotation_places_nothing() -> None:
    p = plan([], {}, rt=RUNTIME)
    assert names(p.create_pods) == ["tj-node-0-0", "tj-node-0-1", "tj-node-0-2"]
    assert all("affinity" not in x["spec"] and "nodeSelector" not in x["spec"] for x in p.create_pods)
    assert jobset_spec(RUNTIME)  # the runtime is torch-distributed as shipped


def test_the_priority_is_the_pods_or_the_admissions_default() -> None:
    """Without the cluster's classes (no RBAC): the pod's spec.priority, else 0 without a class."""
    assert exclusive.priority_of({"priority": 7}) == 7
    assert exclusive.priority_of({}) == 0  # no class, none the global default
    assert exclusive.priority_of({"priorityClassName": "high"}) is None
    assert exclusive.priority_of({"priorityClassName": "high", "priority": 1000}) == 1000


def pclass(name: str, value: int, default: bool = False) -> Obj:
    return {"metadata": {"name": name}, "value": value, "globalDefault": default}


def test_the_priority_is_resolved_from_the_classes_as_the_admission_does() -> None:
    """admission.go `admitPod`: the named class's value; without a name the globalDefault's (of
    several, the lowest: `getDefaultPriorityClass`); an unknown class none (the pod is refused)."""
    classes = exclusive.PriorityClasses.of(
        [pclass("high", 1000), pclass("everyday", 50, True), pclass("low", 10, True)]
    )
    assert exclusive.priority_of({"priorityClassName": "high"}, classes) == 1000
    assert exclusive.priority_of({}, classes) == 10
    assert exclusive.priority_of({"priorityClassName": "gone"}, classes) is None
    assert exclusive.priority_of({}, exclusive.PriorityClasses.of([pclass("high", 1000)])) == 0


def test_a_leader_naming_a_class_is_labelled_and_kept_apart_by_its_value() -> None:
    """A runtime whose pods name only a priorityClassName: with the cluster's classes the leader
    is labelled with the class's value and its anti-affinity keeps out the other jobs of it, as
    JobSet's webhook does after the Priority admission; without them, no label and no priority."""
    rt = copy.deepcopy(EXCLUSIVE)
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"].setdefault("spec", {})["priorityClassName"] = "high"
    classes = exclusive.PriorityClasses.of([pclass("high", 1000), pclass("everyday", 5, True)])

    def anti_priority(leader: Obj) -> list[str]:
        terms = leader["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        [expression] = [e for e in terms[-1]["labelSelector"]["matchExpressions"] if e["key"] == PRIORITY]
        return list(expression["values"])

    [leader] = plan([], {}, rt=rt, classes=classes).create_pods
    assert leader["metadata"]["labels"][PRIORITY] == "1000" and anti_priority(leader) == ["1000"]
    nodes = {"n1": node("n1", **{ZONE: "zone-a"})}
    followers = plan([running(leader, "n1")], nodes, rt=rt, classes=classes).create_pods
    assert [f["metadata"]["labels"][PRIORITY] for f in followers] == ["1000", "1000"]
    [unresolved] = plan([], {}, rt=rt).create_pods
    assert PRIORITY not in unresolved["metadata"]["labels"] and anti_priority(unresolved) == [""]
    # no class named: the globalDefault's value, where spec alone would give 0
    [by_default] = plan([], {}, classes=classes).create_pods
    assert by_default["metadata"]["labels"][PRIORITY] == "5" and anti_priority(by_default) == ["5"]


def test_the_priority_class_cache_keeps_what_the_admission_reads() -> None:
    """The PriorityClass informer's transform and `TrainJobs.priority_classes`: None until the
    informer has listed them."""
    full = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high", "resourceVersion": "3", "uid": "u", "labels": {"a": "b"}},
        "value": 1000,
        "description": "urgent",
        "preemptionPolicy": "Never",
    }
    assert slim_priority_class(full) == {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high", "resourceVersion": "3"},
        "value": 1000,
    }
    jobs = TrainJobs(None, Cache(), SYSTEM_CLOCK, lambda key: None)  # type: ignore[arg-type]
    assert jobs.priority_classes() is None


def test_a_node_change_requeues_the_trainjobs_with_a_pod_on_it() -> None:
    """The Node informer's handler (operator/trainjobs.py): a leader's domain may now be known."""

    cache, queued = Cache(), []

    def on(node_name: str, name: str, kind: str = "TrainJob") -> Obj:
        owner = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": kind,
            "name": name,
            "controller": True,
        }
        meta = {"name": f"{name}-pod", "namespace": "ns", "ownerReferences": [owner]}
        return {"metadata": meta, "spec": {"nodeName": node_name}}

    for pod in (on("n1", "a"), on("n2", "b"), on("n1", "c", kind="PyTorchJob")):
        cache.store(PODS).upsert(pod)
    jobs = TrainJobs(None, cache, SYSTEM_CLOCK, queued.append)  # type: ignore[arg-type]
    jobs.node_changed(node("n1", **{ZONE: "zone-a"}))
    assert queued == ["TrainJob.trainer.kubeflow.org/ns/a"]

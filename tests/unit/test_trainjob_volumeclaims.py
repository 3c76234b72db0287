"""JobSet's volumeClaimPolicies for TrainJobs (jobs/trainjob/volumeclaims.py), pure: Trainer's
torchtune runtimes validate and resolve with the `initializer` PVC volume on every pod that
mounts it; each of JobSet's webhook rules refuses a runtime with the field path; the PVC name
limit depends on the TrainJob's name; and the planner creates the PVCs (named, labelled and
owned as JobSet does) before the first pods, on the first reconcile even while suspended, and
not again while pods exist."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from trainjobs import TORCHTUNE_RUNTIMES, UID, torchtune_runtime, trainjob_pod

from kubetrain.api.errors import format_errors
from kubetrain.jobs.trainjob import children as ch
from kubetrain.jobs.trainjob import volumeclaims as vc
from kubetrain.jobs.trainjob.resolve import resolve
from kubetrain.jobs.trainjob.runtimerules import validate_runtime
from kubetrain.jobs.trainjob.validate import validate_trainjob
from kubetrain.operator.draft import Observed, PlannerConfig
from kubetrain.operator.pods import conflicting_holder
from kubetrain.operator.trainedge import plan_trainjob

from .test_trainplan import NOW, trainjob

Obj = dict[str, Any]
RUNTIMES = sorted(p.relative_to(TORCHTUNE_RUNTIMES).as_posix() for p in TORCHTUNE_RUNTIMES.rglob("*.yaml"))


def tj(name: str = "tj", **spec: Any) -> Obj:
    job = trainjob(nodes=1, **spec)
    job["metadata"]["name"] = name
    job["spec"]["runtimeRef"] = {"name": "torchtune-llama3.2-1b"}
    return job


def template_spec(rt: Obj) -> Obj:
    spec: Obj = rt["spec"]["template"]["spec"]
    return spec


def pod_spec(rt: Obj, i: int) -> Obj:
    spec: Obj = template_spec(rt)["replicatedJobs"][i]["template"]["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("path", RUNTIMES, ids=RUNTIMES)
def test_trainers_torchtune_runtimes_are_valid_and_every_step_gets_the_claim(path: Path) -> None:
    rt = torchtune_runtime(path)
    assert validate_runtime(rt) == []
    resolved, errors = resolve(tj(), rt)
    assert resolved is not None, format_errors(errors)
    assert [(c.template, c.name, c.delete) for c in resolved.claims] == [
        ("initializer", "initializer-tj", True)
    ]
    assert resolved.claims[0].spec == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "20Gi"}},
    }
    assert [s.name for s in resolved.steps] == ["dataset-initializer", "model-initializer", "node"]
    for step in resolved.steps:
        assert step.pod_template["spec"]["volumes"] == [
            {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-tj"}}
        ]
    assert resolved.claims and rt == torchtune_runtime(path)  # the runtime itself is not changed


def test_only_pod_templates_that_mount_the_claim_get_it_also_from_an_init_container() -> None:
    rt = torchtune_runtime()
    dataset = pod_spec(rt, 0)
    dataset["initContainers"] = [dict(dataset["containers"][0], name="fetch")]
    del dataset["containers"][0]["volumeMounts"]
    del pod_spec(rt, 1)["containers"][0]["volumeMounts"]
    resolved, errors = resolve(tj(), rt)
    assert resolved is not None, format_errors(errors)
    volumes = {s.name: s.pod_template["spec"].get("volumes") for s in resolved.steps}
    claim = [{"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-tj"}}]
    assert volumes == {"dataset-initializer": claim, "model-initializer": None, "node": claim}


def errors_of(rt: Obj) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in validate_runtime(rt)]


def test_each_jobset_webhook_rule_refuses_a_runtime_naming_the_field() -> None:
    base = "spec.template.spec.volumeClaimPolicies"
    rt = torchtune_runtime()
    policy = template_spec(rt)["volumeClaimPolicies"][0]
    policy["templates"].append(copy.deepcopy(policy["templates"][0]))
    policy["retentionPolicy"] = {"whenDeleted": "Keep"}
    paths = [p for p, _ in errors_of(rt)]
    assert paths == [f"{base}[0].retentionPolicy.whenDeleted", f"{base}[0].templates[1].metadata.name"]

    rt = torchtune_runtime()
    template = template_spec(rt)["volumeClaimPolicies"][0]["templates"][0]
    template["metadata"] = {"name": "Init_Data", "namespace": "other"}
    found = errors_of(rt)
    assert [p for p, _ in found] == [
        f"{base}[0].templates[0].metadata.namespace",
        f"{base}[0].templates[0].metadata.name",
        "spec.template.spec.replicatedJobs",  # and nothing mounts "Init_Data"
    ]
    assert "RFC 1123 subdomain" in found[1][1] and '"Init_Data"' in found[2][1]

    rt = torchtune_runtime()
    template_spec(rt)["volumeClaimPolicies"][0]["templates"][0]["metadata"] = {}
    assert [p for p, _ in errors_of(rt)] == [f"{base}[0].templates[0].metadata.name"]

    rt = torchtune_runtime()
    pod_spec(rt, 2)["volumes"] = [{"name": "initializer", "emptyDir": {}}]
    found = errors_of(rt)
    assert [p for p, _ in found] == [
        "spec.template.spec.replicatedJobs[2].template.spec.template.spec.volumes[0].name"
    ]

    rt = torchtune_runtime()
    template_spec(rt)["volumeClaimPolicies"] = [{"templates": []}] * (vc.MAX_ITEMS + 1)
    assert errors_of(rt) == [(base, "must have at most 50 items, not 51")]


def test_retention_defaults_to_delete_and_retain_is_kept() -> None:
    rt = torchtune_runtime()
    assert vc.when_deleted(template_spec(rt)["volumeClaimPolicies"][0]) == vc.DELETE
    template_spec(rt)["volumeClaimPolicies"][0]["retentionPolicy"] = {"whenDeleted": "Retain"}
    resolved, _ = resolve(tj(), rt)
    assert resolved is not None and not resolved.claims[0].delete


def test_the_pvc_name_limit_depends_on_the_trainjob_name() -> None:
    rt = torchtune_runtime()
    # steps of short names, so that the pods' hostnames (`<tj>-<step>-0-0`) are not the limit
    short = {"dataset-initializer": "data", "model-initializer": "model"}
    for rjob in template_spec(rt)["replicatedJobs"]:
        rjob["name"] = short.get(rjob["name"], rjob["name"])
        for dep in rjob.get("dependsOn") or []:
            dep["name"] = short.get(dep["name"], dep["name"])
    longest = "t" * (vc.MAX_CLAIM_NAME - len("initializer-"))
    assert resolve(tj(longest), rt)[0] is not None
    resolved, errors = resolve(tj(longest + "x"), rt)
    assert resolved is None
    assert [e.path for e in errors] == ["metadata.name"]
    assert "initializer-" in errors[0].message and "at most 51 characters" in errors[0].message
    # …and admission says so for the TrainJob.
    refused = validate_trainjob(tj(longest + "x"), None, rt)
    assert [e.path for e in refused] == ["metadata.name"]


def plan(job: Obj, pods: list[Obj], extra: list[Obj], rt: Obj) -> Any:
    observed = Observed(pods=pods, service={"metadata": {"name": "tj"}}, extra=extra)
    return plan_trainjob(job, observed, rt, NOW, PlannerConfig())


def snapshot(job: Obj, rt: Obj) -> Obj:
    cm = ch.build_snapshot(job, rt, {})
    cm["metadata"]["resourceVersion"] = "7"
    return cm


def test_the_first_reconcile_creates_the_pvc_after_the_snapshot_before_any_pod() -> None:
    rt, job = torchtune_runtime(), tj()
    p = plan(job, [], [], rt)
    kinds = [(x["kind"], x["metadata"]["name"]) for x in p.create_children]
    assert kinds == [("ConfigMap", "tj-runtime-snapshot"), ("PersistentVolumeClaim", "initializer-tj")]
    pvc = p.create_children[1]
    assert pvc["metadata"]["namespace"] == "ns"
    assert pvc["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "tj"
    assert pvc["metadata"]["labels"]["kubetrain.io/job-name"] == "tj"
    assert pvc["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "tj",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pvc["spec"] == template_spec(rt)["volumeClaimPolicies"][0]["templates"][0]["spec"]
    # the initializers (the node waits for them to Complete)
    assert sorted(x["metadata"]["name"] for x in p.create_pods) == [
        "tj-dataset-initializer-0-0",
        "tj-model-initializer-0-0",
    ]


def test_retried_while_no_pod_exists_and_not_written_once_pods_do() -> None:
    rt, job = torchtune_runtime(), tj()
    snap = snapshot(job, rt)
    p = plan(job, [], [snap], rt)  # the first create failed: no pod was created
    assert [x["kind"] for x in p.create_children] == ["PersistentVolumeClaim"] and p.create_pods
    running = plan(job, [trainjob_pod("tj-dataset-initializer-0-0")], [snap], rt)
    assert running.create_children == [] and [x["metadata"]["name"] for x in running.create_pods] == [
        "tj-model-initializer-0-0"
    ]


def test_a_suspended_trainjob_gets_its_pvc_at_once_as_a_suspended_jobset_does() -> None:
    rt, job = torchtune_runtime(), tj(suspend=True)
    p = plan(job, [], [], rt)
    assert [x["kind"] for x in p.create_children] == ["ConfigMap", "PersistentVolumeClaim"]
    assert p.create_pods == []
    again = plan(job, [], [snapshot(job, rt)], rt)
    assert again.create_children == [] and again.create_pods == []


def test_retain_makes_a_pvc_without_owner() -> None:
    rt, job = torchtune_runtime(), tj()
    template_spec(rt)["volumeClaimPolicies"][0]["retentionPolicy"] = {"whenDeleted": "Retain"}
    template_spec(rt)["volumeClaimPolicies"][0]["templates"][0]["metadata"]["labels"] = {"team": "a"}
    template_spec(rt)["volumeClaimPolicies"][0]["templates"][0]["metadata"]["annotations"] = {"note": "x"}
    pvc = plan(job, [], [], rt).create_children[1]
    assert "ownerReferences" not in pvc["metadata"]
    assert pvc["metadata"]["labels"]["team"] == "a" and pvc["metadata"]["annotations"] == {"note": "x"}


def test_an_existing_claim_serves_the_trainjob_unless_going_away_or_anothers() -> None:
    """A PVC create answered AlreadyExists: the applier reads the PVC and waits unless it can
    serve this TrainJob (operator.pods.conflicting_holder)."""
    job = {"kind": "TrainJob", "metadata": {"name": "tj", "uid": "new"}}

    def pvc(**meta: Any) -> Obj:
        return {"metadata": {"name": "initializer-tj", **meta}}

    def owner(uid: str, kind: str = "TrainJob") -> dict[str, Any]:
        return {"kind": kind, "name": "tj", "uid": uid, "controller": True}

    assert conflicting_holder(pvc(ownerReferences=[owner("new")]), job) == ""  # its own
    assert conflicting_holder(pvc(), job) == ""  # nobody's (Retain, or made by hand): used as it is
    assert conflicting_holder(pvc(deletionTimestamp="2026-11-26T07:00:00Z"), job) == "it is being deleted"
    assert conflicting_holder(pvc(ownerReferences=[owner("old")]), job) == (
        'it belongs to TrainJob "tj" (uid old)'  # an earlier TrainJob of the name
    )
    not_controller = {**owner("old"), "controller": False}
    assert conflicting_holder(pvc(ownerReferences=[not_controller]), job) == ""

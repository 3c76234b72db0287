"""The stages that read a job once (docs/architecture.md, "One form per stage"): the parse stage's
`read_draft` shared by the webhooks' edge, the job's annotations parsed once
(`JobAnnotations`, host network mode included), and the type stage (`read_typed`)."""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.api.common import DEFAULT_CLEAN_POD_POLICY, JobBase
from kubetrain.api.groups import KUBEFLOW_GROUP, KUBETRAIN_GROUP
from kubetrain.api.trainerstatus import ANNOTATION_DEADLINE
from kubetrain.frameworks.hostnetwork import DEFAULT_PORT_RANGE
from kubetrain.jobs.annotations import read_annotations
from kubetrain.jobs.defaulting import default_job, default_v1
from kubetrain.jobs.jobdraft import read_draft, read_job
from kubetrain.jobs.parse import read_typed
from kubetrain.jobs.typemeta import check_type_meta
from kubetrain.jobs.validation import validate_job
from kubetrain.operator.prepare import prepare_job
from tests.jobs import job

RANGE = "kubetrain.io/host-port-range"


def kubedl_tfjob() -> dict[str, Any]:
    obj = job("TFJob", replicas={"Worker": 1}, api_version="training.kubedl.io/v1alpha1")
    obj["spec"].update(backoffLimit=2, cronPolicy={"schedule": "* * * * *"})
    return obj


def test_read_draft_reads_a_request_as_it_is_and_read_job_copies_it_without_status() -> None:
    obj = job("PyTorchJob", replicas={"Master": 1, "Worker": 1})
    obj["status"] = {"conditions": []}
    draft = read_draft(obj)
    # The webhooks' edge: the object itself (copy-on-write defaulting only reads it), status kept.
    assert draft.wire is obj and not draft.converted and draft.errors == []
    stored = read_job(obj)
    assert "status" not in stored.wire and stored.wire["spec"] == obj["spec"]
    assert stored.wire["spec"] is not obj["spec"]  # a copy: the informer's object stays untouched


def test_read_draft_converts_a_kubedl_job_once_with_its_refused_fields() -> None:
    obj = kubedl_tfjob()
    before = copy.deepcopy(obj)
    draft = read_draft(obj)
    assert obj == before
    assert draft.converted
    assert draft.wire["spec"]["runPolicy"] == {"backoffLimit": 2}
    assert [e.path for e in draft.errors] == ["spec.cronPolicy"]
    # The webhook refuses the same field, at the path the user wrote, and defaults in KubeDL's layout.
    assert [e.path for e in validate_job(obj).errors][:1] == ["spec.cronPolicy"]
    defaulted = default_job(obj).obj["spec"]
    assert "runPolicy" not in defaulted and defaulted["backoffLimit"] == 2
    assert defaulted["cleanPodPolicy"] == DEFAULT_CLEAN_POD_POLICY  # inline, where KubeDL has it


def test_host_network_annotations_are_parsed_once() -> None:
    obj = job("TFJob", replicas={"Worker": 3})
    obj["metadata"]["annotations"] = {"kubedl.io/network-mode": "host", RANGE: "30000-30001"}
    net = read_annotations(obj).host_network
    assert net.enabled and net.port_range == (30000, 30001) and net.errors == ()
    assert net.errors_for(2) == []
    [too_few] = net.errors_for(3)
    assert too_few.path == f"metadata.annotations[{RANGE}]"
    assert '"30000-30001" has 2 ports, fewer than the job\'s 3 pods' in too_few.message
    # The same problem from the webhook and the controller, and the layout uses the parsed range.
    assert [str(e) for e in validate_job(default_job(obj).obj).errors] == [str(too_few)]
    obj["metadata"]["annotations"][RANGE] = "30000-30009"
    prepared = prepare_job(obj)
    assert prepared.valid and prepared.layout is not None
    ports = sorted(prepared.layout.host_ports.values())
    assert len(ports) == 3 and all(30000 <= p <= 30009 for p in ports)


def test_a_bad_port_range_is_an_error_and_the_default_range_is_used() -> None:
    obj = job("TFJob", replicas={"Worker": 1})
    obj["metadata"]["annotations"] = {"kubetrain.io/network-mode": "bridge", RANGE: "9-1"}
    net = read_annotations(obj).host_network
    assert not net.enabled and net.port_range == DEFAULT_PORT_RANGE
    assert [e.path for e in net.errors] == [
        "metadata.annotations[kubetrain.io/network-mode]",
        f"metadata.annotations[{RANGE}]",
    ]
    assert net.errors_for(100_000) == list(net.errors)  # no size check on a range that is not one


def test_the_type_stage_reads_the_model_once_or_says_why_not() -> None:
    good = default_job(job("PyTorchJob", replicas={"Master": 1, "Worker": 2})).obj
    typed = read_typed(read_draft(good))
    assert isinstance(typed.model, JobBase) and typed.framework is not None
    assert typed.errors == () and typed.type_errors == ()
    wrong_group = dict(good, apiVersion="kubeflow.org/v2")
    refused = read_typed(read_draft(wrong_group))
    assert refused.model is None and refused.framework is None
    assert [e.path for e in refused.type_errors] == ["apiVersion"]
    bad = copy.deepcopy(good)
    bad["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "two"
    invalid = read_typed(read_draft(bad))
    assert invalid.model is None and invalid.framework is not None
    assert [e.path for e in invalid.errors] == ["spec.pytorchReplicaSpecs[Worker].replicas"]
    assert check_type_meta(["not", "a", "job"])[0].path == "<root>"


def test_the_parse_stage_checks_kind_and_api_version_for_the_groups_served() -> None:
    kubeflow = dict(job("PyTorchJob", replicas={"Master": 1}), apiVersion=f"{KUBEFLOW_GROUP}/v1")
    assert read_job(kubeflow).type_errors == ()  # both groups served by default
    only_ours = read_draft(kubeflow, groups=(KUBETRAIN_GROUP,))
    assert only_ours.framework is not None  # the kind is known; its group is not served
    assert [e.path for e in only_ours.type_errors] == ["apiVersion"]
    assert read_typed(only_ours).model is None
    # defaulting keeps the parse stage's verdict for the type stage
    defaulted = default_v1(only_ours).draft
    assert defaulted is not None and defaulted.type_errors == only_ours.type_errors
    unknown = read_draft(dict(kubeflow, kind="CaffeJob"))
    assert unknown.framework is None and [e.path for e in unknown.type_errors] == ["kind"]


def test_the_replica_map_is_read_once_into_replica_drafts() -> None:
    sidecar = {"name": "log", "image": "busybox"}
    obj = job(
        "PyTorchJob",
        replicas={"master": 1, "Worker": {"replicas": "3", "template": {}}, "worker": None},
        container_extra={"name": "pytorch"},
    )
    master = obj["spec"]["pytorchReplicaSpecs"]["master"]
    master["template"]["spec"]["containers"].insert(0, sidecar)
    del master["replicas"]
    drafts = read_draft(obj).replicas
    assert drafts is not None
    by_key = {r.key: r for r in drafts}
    # `master` names exactly one type: defaulting gives it the canonical key; `Worker` and
    # `worker` name the same type, so both keep theirs (validation reports the duplicate).
    assert [(r.key, r.type) for r in drafts] == [
        ("master", "Master"),
        ("Worker", "Worker"),
        ("worker", "worker"),
    ]
    assert by_key["master"].path == "spec.pytorchReplicaSpecs[master]"
    # Absent replicas count 1; a string is no count; a replica spec that is not an object has none.
    assert [r.count for r in drafts] == [1, None, None]
    assert by_key["master"].container_index == 1  # the container named after the framework
    assert by_key["master"].containers[0] is sidecar
    assert by_key["Worker"].container_index is None  # no containers: validation says so
    assert read_draft({**obj, "spec": {"pytorchReplicaSpecs": []}}).replicas is None


def test_defaulting_gives_the_defaulted_replica_drafts_and_the_controller_s_clamp() -> None:
    obj = job("PyTorchJob", replicas={"master": 1, "worker": 7})
    obj["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4}
    stored = read_job(obj)
    webhook = default_v1(stored, gang_scheduling=True)
    assert webhook.adjustments == [] and webhook.draft is not None
    assert webhook.draft.wire is webhook.obj and webhook.draft.replicas is not None
    assert [(r.key, r.count, r.path) for r in webhook.draft.replicas] == [
        ("Master", 1, "spec.pytorchReplicaSpecs[Master]"),
        ("Worker", 7, "spec.pytorchReplicaSpecs[Worker]"),
    ]
    # The gang default counts elastic Workers at their minimum.
    assert webhook.obj["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2
    controller = default_v1(stored, gang_scheduling=True, adjust=True)
    assert controller.adjustments == [
        "spec.pytorchReplicaSpecs[Worker].replicas 7 is outside elasticPolicy minReplicas..maxReplicas "
        "(1..4): running 4 Workers"
    ]
    assert controller.draft is not None and controller.draft.counts == {"Master": 1, "Worker": 4}
    assert controller.obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 4
    assert stored.wire["spec"]["pytorchReplicaSpecs"]["worker"]["replicas"] == 7  # copy-on-write
    assert prepare_job(obj).adjustments == controller.adjustments


def test_the_progress_deadline_annotation_is_parsed_once_for_the_layout() -> None:
    obj = job("TFJob", replicas={"Worker": 1})
    obj["metadata"]["annotations"] = {ANNOTATION_DEADLINE: "90"}
    draft = read_job(obj)
    assert draft.annotations.progress_deadline == 90
    # The layout takes the parsed value; runPolicy's own field comes first.
    assert prepare_job(obj).run_policy.progress_deadline_seconds == 90
    obj["spec"]["runPolicy"] = {"progressDeadlineSeconds": 30}
    assert prepare_job(obj).run_policy.progress_deadline_seconds == 30
    for bad in ("0", "soon", "-5"):
        obj["metadata"]["annotations"] = {ANNOTATION_DEADLINE: bad}
        assert read_annotations(obj).progress_deadline is None


def test_update_rules_compare_the_drafts_of_both_jobs_in_kubetrain_s_layout() -> None:
    stored = kubedl_tfjob()
    del stored["spec"]["cronPolicy"]
    scaled = copy.deepcopy(stored)
    scaled["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 3
    assert [str(e) for e in validate_job(scaled, stored).errors] == [
        "spec.tfReplicaSpecs[Worker].replicas: Forbidden: can only change while the job is suspended "
        "(spec.runPolicy.suspend: true)"
    ]
    grown = copy.deepcopy(stored)
    grown["spec"]["tfReplicaSpecs"]["PS"] = copy.deepcopy(stored["spec"]["tfReplicaSpecs"]["Worker"])
    errors = [str(e) for e in validate_job(grown, stored).errors]
    assert errors[0].startswith(
        "spec.tfReplicaSpecs: Forbidden: the set of replica types is immutable (was Worker; now Worker, PS)"
    )
    # Only metadata changed: the update rules are not run, the service mode is still checked.
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["annotations"] = {"kubetrain.io/service-mode": "per-pod"}
    assert [e.path for e in validate_job(relabelled, stored).errors] == [
        "metadata.annotations[kubetrain.io/service-mode]"
    ]


def test_migrate_is_suggested_only_for_an_older_kubeflow_version_of_a_job_kind() -> None:
    old_tfjob = check_type_meta({"apiVersion": "kubeflow.org/v1beta1", "kind": "TFJob"})
    assert [e.path for e in old_tfjob] == ["apiVersion"]
    assert "`kubetrain migrate FILE` rewrites it" in old_tfjob[0].message
    katib = check_type_meta({"apiVersion": "kubeflow.org/v1beta1", "kind": "Experiment"})
    assert [e.path for e in katib] == ["kind", "apiVersion"]
    assert not any("migrate" in e.message for e in katib)  # Katib's Experiment: no job to migrate

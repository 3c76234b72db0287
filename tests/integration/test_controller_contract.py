"""Contract audit of docs/behaviour.md §4-§10 against the running controller (devcluster + DevStack):
the scale subresource of elastic PyTorch Workers, Events for delete failures, and the
Prometheus metrics a job's life produces (served on /metrics with their labels)."""

from __future__ import annotations

import pytest

from kubetrain.dev.stack import DevStack
from kubetrain.kube.client import ApiError
from kubetrain.kube.resources import SERVICES, job_resource
from kubetrain.serving.metrics import REGISTRY

from .controller_support import Harness, eventually, job_manifest, metrics_text, replica_status

pytestmark = pytest.mark.asyncio(loop_scope="module")


def elastic_job(name: str, workers: int) -> dict[str, object]:
    return job_manifest(
        "PyTorchJob",
        name,
        {"Worker": workers},
        extra_spec={"elasticPolicy": {"minReplicas": 1, "maxReplicas": 4}},
    )


async def test_scale_subresource_resizes_elastic_workers(env: tuple[DevStack, Harness]) -> None:
    """`kubectl scale ptj/NAME --replicas=N`: the scale subresource reads the Worker count and the
    selector from status, and a write within min..max adds or removes Worker pods."""
    _, h = env
    ns = await h.namespace("scale")
    ref = job_resource("PyTorchJob")
    await h.create_job(elastic_job("el", 2), ns)
    await h.wait_pods(ns, "el", 2)
    job = await h.wait_job(
        "PyTorchJob", ns, "el", lambda j: replica_status(j, "Worker").get("selector"), "Worker selector"
    )
    selector = replica_status(job, "Worker")["selector"]
    assert selector == "kubetrain.io/job-name=el,kubetrain.io/replica-type=worker"

    scale = await h.kube.request("get", "GET", ref.path(ns, "el", "scale"))
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    assert scale["status"]["selector"] == selector

    await h.kube.patch(ref, ns, "el", {"spec": {"replicas": 3}}, subresource="scale")
    await h.wait_pod_names(ns, "el", ["el-worker-0", "el-worker-1", "el-worker-2"])
    await h.wait_pods(ns, "el", 3)

    await h.kube.patch(ref, ns, "el", {"spec": {"replicas": 1}}, subresource="scale")
    await h.wait_pod_names(ns, "el", ["el-worker-0"])
    job = await h.job("PyTorchJob", ns, "el")
    assert job is not None and not any(
        c["type"] == "Failed" and c["status"] == "True" for c in job["status"]["conditions"]
    )


async def test_scale_beyond_max_is_refused_by_the_webhook(env: tuple[DevStack, Harness]) -> None:
    """The validating webhook is registered for `pytorchjobs/scale` (kube-apiserver sends scale
    writes only to webhooks naming the subresource): `kubectl scale` past maxReplicas is refused
    with the field and the range, and nothing changes."""
    _, h = env
    ns = await h.namespace("scalemax")
    ref = job_resource("PyTorchJob")
    await h.create_job(elastic_job("big", 2), ns)
    await h.wait_pods(ns, "big", 2)
    with pytest.raises(ApiError) as denied:
        await h.kube.patch(ref, ns, "big", {"spec": {"replicas": 6}}, subresource="scale")
    assert denied.value.status == 422
    assert "spec.pytorchReplicaSpecs[Worker].replicas" in str(denied.value)
    assert "minReplicas..maxReplicas (1..4)" in str(denied.value)
    stored = await h.kube.get(ref, ns, "big")
    assert stored["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2


async def test_scale_of_a_running_non_elastic_job_is_refused(env: tuple[DevStack, Harness]) -> None:
    """Workers of a running non-elastic job cannot change through /scale either (each pod's
    WORLD_SIZE is fixed at creation); once suspended they can."""
    _, h = env
    ns = await h.namespace("scalefixed")
    ref = job_resource("PyTorchJob")
    await h.create_job(job_manifest("PyTorchJob", "fixed", {"Master": 1, "Worker": 3}), ns)
    await h.wait_pods(ns, "fixed", 4)
    with pytest.raises(ApiError) as denied:
        await h.kube.patch(ref, ns, "fixed", {"spec": {"replicas": 4}}, subresource="scale")
    assert denied.value.status == 422
    assert (
        "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: can only change while the job is suspended"
        in str(denied.value)
    )
    await h.kube.patch(ref, ns, "fixed", {"spec": {"runPolicy": {"suspend": True}}})
    await h.wait_pod_names(ns, "fixed", [])
    for _ in range(5):  # the controller's status writes can race the scale write (409)
        try:
            await h.kube.patch(ref, ns, "fixed", {"spec": {"replicas": 4}}, subresource="scale")
            break
        except ApiError as err:
            if err.status != 409:
                raise
    stored = await h.kube.get(ref, ns, "fixed")
    assert stored["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 4


async def test_failed_service_delete_is_an_event_and_retried(env: tuple[DevStack, Harness]) -> None:
    _, h = env
    ns = await h.namespace("delsvc")
    await h.create_job(job_manifest("TFJob", "ds", {"Worker": 1}), ns)
    await h.wait_pods(ns, "ds", 1)
    rule = h.faults.fail(verb="delete", resource="services", namespace=ns, status=500, count=1)
    await h.finish_all(ns, "ds")
    event = await h.wait_event(ns, "ds", "FailedDeleteService")
    assert event["type"] == "Warning" and "ds" in event["message"]
    assert rule.fired == 1
    await eventually(lambda: h.absent(SERVICES, ns, "ds"), what="Service ds deleted on the retry")


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_metrics_after_jobs_ran(env: tuple[DevStack, Harness]) -> None:
    """Every §10 metric with its labels, scraped from /metrics after jobs succeeded, failed and
    restarted."""
    _, h = env
    ns = await h.namespace("metrics")
    labels = {"kind": "PyTorchJob", "namespace": ns}
    tf_labels = {"kind": "TFJob", "namespace": ns}
    await h.create_job(job_manifest("PyTorchJob", "ok", {"Master": 1, "Worker": 1}), ns)
    await h.create_job(job_manifest("TFJob", "bad", {"Worker": 1}), ns)
    await h.create_job(job_manifest("PyTorchJob", "rs", {"Master": 1}, restart_policy="ExitCode"), ns)
    await h.end_ok_bad_and_rs(ns)
    await h.wait_condition("PyTorchJob", ns, "ok", "Succeeded")
    await h.wait_condition("TFJob", ns, "bad", "Failed")
    await h.wait_job(
        "PyTorchJob", ns, "rs", lambda j: replica_status(j, "Master").get("restarts") == 1, "restart"
    )

    text = await metrics_text()

    def line(name: str, **lbl: str) -> str:
        body = ",".join(f'{k}="{v}"' for k, v in lbl.items())
        return f"{name}{{{body}}}"

    assert f"{line('kubetrain_jobs_created_total', **labels)} 2.0" in text
    assert f"{line('kubetrain_jobs_created_total', **tf_labels)} 1.0" in text
    assert f"{line('kubetrain_jobs_succeeded_total', **labels)} 1.0" in text
    assert f"{line('kubetrain_jobs_failed_total', **tf_labels)} 1.0" in text
    assert f"{line('kubetrain_jobs_restarted_total', **labels)} 1.0" in text
    assert _sample("kubetrain_reconcile_duration_seconds_count", kind="PyTorchJob") > 0
    assert 'kubetrain_reconcile_duration_seconds_bucket{kind="TFJob",le="0.001"}' in text
    assert 'kubetrain_workqueue_depth{queue="jobs"}' in text
    assert _sample("kubetrain_api_requests_total", verb="create", code="201") > 0
    assert _sample("kubetrain_api_requests_total", verb="update", code="200") > 0
    # The admission webhooks of the dev stack answered the creates.
    assert (
        _sample(
            "kubetrain_webhook_request_duration_seconds_count",
            webhook="mutate",
            operation="CREATE",
            kind="PyTorchJob",
            result="patched",
        )
        > 0
    )
    assert (
        _sample(
            "kubetrain_webhook_request_duration_seconds_count",
            webhook="validate",
            operation="CREATE",
            kind="TFJob",
            result="allowed",
        )
        > 0
    )

"""controller-runtime's standard series on a running operator's /metrics (docs/operations.md
"Metrics"): a kubeflow.org PyTorchJob and a kubetrain.io TFJob admitted by the real webhooks and
run by the controller against devcluster; the scrape shows each kind's reconciles under its
controller's name, the one job work queue's series and the webhook series by path."""

from __future__ import annotations

from kubetrain.kube.resources import job_resources_in

from .controller_support import eventually, is_true, job_manifest, running_stack, scrape

PYTORCHJOBS = job_resources_in(["kubeflow.org"])["PyTorchJob.kubeflow.org"]


async def test_controller_runtime_series_of_a_running_operator() -> None:
    async with running_stack(api_groups=("kubetrain.io", "kubeflow.org"), workers=3) as (_, h):
        before = await scrape()
        ns = await h.namespace("crmetrics")
        job = job_manifest("PyTorchJob", "kf", {"Master": 1, "Worker": 1})
        job["apiVersion"] = "kubeflow.org/v1"
        await h.kube.create(PYTORCHJOBS, job, namespace=ns)
        await h.create_job(job_manifest("TFJob", "kt", {"Worker": 1}), ns)
        await h.wait_pods(ns, "kf", 2)
        await h.wait_pods(ns, "kt", 1)
        await h.wait_job("TFJob", ns, "kt", lambda j: is_true(j, "Running"), "Running")

        async def settled() -> dict[str, float] | None:
            samples = await scrape()
            idle = all(
                v == 0 for k, v in samples.items() if k.startswith("controller_runtime_active_workers")
            )
            return samples if idle else None

        after = await eventually(settled, what="no reconcile under way")

    def grew(key: str) -> float:
        return after[key] - before.get(key, 0.0)

    kf, kt = 'controller="pytorchjob-controller"', 'controller="kubetrain-tfjob-controller"'
    for controller in (kf, kt):
        assert grew(f'controller_runtime_reconcile_total{{{controller},result="success"}}') >= 1
        # (A 409 on a stale cache is an error too: under load one may happen; it counts twice.)
        errors = after[f"controller_runtime_reconcile_errors_total{{{controller}}}"]
        assert errors == after[f'controller_runtime_reconcile_total{{{controller},result="error"}}']
        assert after[f"controller_runtime_max_concurrent_reconciles{{{controller}}}"] == 3
        handed_out = sum(
            grew(f'controller_runtime_reconcile_total{{{controller},result="{result}"}}')
            for result in ("success", "requeue_after", "error", "requeue")
        )
        assert grew(f"controller_runtime_reconcile_time_seconds_count{{{controller}}}") == handed_out
    # Every served kind's controller is there from the start, even one with no job.
    for result in ("success", "error", "requeue", "requeue_after"):
        assert (
            f'controller_runtime_reconcile_total{{controller="mpijob-controller",result="{result}"}}' in after
        )
    assert (
        'controller_runtime_reconcile_total{controller="kubetrain-mpijob-controller",result="success"}'
        in after
    )
    # The one job queue, named as controller-runtime names a queue: its name twice.
    jobs = 'controller="jobs",name="jobs"'
    assert grew(f"workqueue_adds_total{{{jobs}}}") >= 2
    assert after[f"workqueue_queue_duration_seconds_count{{{jobs}}}"] >= 2
    assert after[f"workqueue_work_duration_seconds_count{{{jobs}}}"] >= 2
    assert f"workqueue_depth{{{jobs}}}" in after
    assert f"workqueue_retries_total{{{jobs}}}" in after
    assert f"workqueue_longest_running_processor_seconds{{{jobs}}}" in after
    # The API server called the webhooks by their paths: both creates answered 200.
    assert grew('controller_runtime_webhook_requests_total{code="200",webhook="/mutate"}') >= 2
    assert grew('controller_runtime_webhook_requests_total{code="200",webhook="/validate"}') >= 2
    assert grew('controller_runtime_webhook_latency_seconds_count{webhook="/validate"}') >= 2
    assert after['controller_runtime_webhook_requests_in_flight{webhook="/mutate"}'] == 0

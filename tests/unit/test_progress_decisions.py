"""The training-progress endpoint's decisions: the wire format, who may report, the per-job
rate limit and write coalescing (on a fake clock), and what pods are given."""

from __future__ import annotations

import json
from typing import Any

import jobs
import pytest

from kubetrain.api import trainerstatus as ts
from kubetrain.frameworks.env import JobLayout
from kubetrain.kube.clock import FakeClock
from kubetrain.operator.prepare import prepare_job
from kubetrain.operator.progressenv import ProgressInjection, config_map, enabled, inject
from kubetrain.progress import authz
from kubetrain.progress.coalesce import Coalescer

JOB_UID = "job-uid"
AUDIENCE = "kubetrain.io/v1/namespaces/ns/pytorchjobs/mnist/status"


def body(**status: Any) -> bytes:
    return json.dumps({"trainerStatus": status}).encode()


# ---- the wire format ------------------------------------------------------------------------


def test_sdk_report_is_parsed_as_sent() -> None:
    # Exactly what update_trainjob_status(40, 600, {"loss": 0.31, "step": 7}) POSTs.
    raw = body(
        lastUpdatedTime="2026-01-01T00:00:00.123456+00:00",
        progressPercentage=40,
        estimatedRemainingSeconds=600,
        metrics=[{"name": "loss", "value": "0.31"}, {"name": "step", "value": "7"}],
    )
    assert ts.parse_report(raw) == {
        "progressPercentage": 40,
        "estimatedRemainingSeconds": 600,
        "metrics": [{"name": "loss", "value": "0.31"}, {"name": "step", "value": "7"}],
    }
    assert ts.parse_report(b"{}") is None  # no trainerStatus: 200, nothing written


@pytest.mark.parametrize(
    ("raw", "code", "words"),
    [
        (b"[]", 400, "JSON object"),
        (b"\xff", 400, "JSON object"),
        (body(progressPercentage=101), 422, "trainerStatus.progressPercentage: must be between 0 and 100"),
        (body(progressPercentage=-1), 422, "between 0 and 100"),
        (body(progressPercentage=True), 422, "must be an integer"),
        (body(progressPercentage=4.5), 422, "must be an integer"),
        (body(estimatedRemainingSeconds=-5), 422, "trainerStatus.estimatedRemainingSeconds"),
        (body(metrics=[{"name": "m", "value": "1"}] * 2), 422, "duplicate metric"),
        (body(metrics=[{"name": f"m{i}", "value": "1"} for i in range(257)]), 422, "at most 256 metrics"),
        (body(metrics=[{"name": "", "value": "1"}]), 422, "metrics[0].name"),
        (body(metrics=[{"name": "x" * 65, "value": "1"}]), 422, "1 to 64 characters"),
        (body(metrics=[{"name": "loss", "value": 0.3}]), 422, "metrics[0].value"),
        (body(lastUpdatedTime="yesterday"), 422, "RFC 3339"),
        (body(progress=1), 422, "trainerStatus.progress: unknown field"),
        (json.dumps({"status": {}}).encode(), 422, 'unknown field "status"'),
    ],
)
def test_bad_reports_name_the_field(raw: bytes, code: int, words: str) -> None:
    error = ts.parse_report(raw)
    assert isinstance(error, ts.ReportError)
    assert error.code == code and words in error.message


def test_paths_and_audiences_have_trainers_shape() -> None:
    route = ts.parse_path("/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/llm/status")
    assert route == ts.Route("trainer.kubeflow.org", "v1alpha1", "trainjobs", "team", "llm")
    assert route.audience == "trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/llm/status"
    for bad in (
        "/apis/g/v1/namespaces/ns/x/n",
        "/apis/g/v1/namespaces/NS/x/n/status",
        "/status",
        "/apis/g/v1",
    ):
        assert ts.parse_path(bad) is None


# ---- who may report -------------------------------------------------------------------------


def review(pod: str = "mnist-worker-0", uid: str = "pod-uid", **over: Any) -> dict[str, Any]:
    status = {
        "authenticated": True,
        "audiences": [AUDIENCE],
        "user": {
            "username": "system:serviceaccount:ns:default",
            "extra": {authz.POD_NAME: [pod], authz.POD_UID: [uid]},
        },
    }
    status.update(over)
    return status


def job(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "mnist", "namespace": "ns", "uid": JOB_UID}, "status": status}


def pod(owner: str = JOB_UID, uid: str = "pod-uid", **meta: Any) -> dict[str, Any]:
    refs = [{"kind": "PyTorchJob", "uid": owner, "controller": True}]
    return {"metadata": {"name": "mnist-worker-0", "uid": uid, "ownerReferences": refs, **meta}}


def test_bearer_header() -> None:
    assert authz.bearer_token("Bearer abc") == "abc"
    assert authz.bearer_token("bearer   abc ") == "abc"
    assert authz.bearer_token("Basic abc") is None
    assert authz.bearer_token(None) is None


def test_a_pod_of_the_job_may_report() -> None:
    claim = authz.pod_claim(review(), AUDIENCE)
    assert claim == authz.PodClaim("ns", "mnist-worker-0", "pod-uid")
    assert authz.admit(job(), "PyTorchJob ns/mnist", claim, pod()) is None


@pytest.mark.parametrize(
    ("status", "words"),
    [
        ({"authenticated": False, "error": "[invalid bearer token, token has expired]"}, "token has expired"),
        (review(audiences=["other"]), "not valid for audience"),
        (review(user={"username": "system:serviceaccount:ns:default"}), "not bound to a pod"),
        (
            review(user={"username": "alice", "extra": {authz.POD_NAME: ["p"], authz.POD_UID: ["u"]}}),
            "not bound",
        ),
    ],
)
def test_tokens_not_bound_to_a_pod_for_this_job_are_forbidden(status: dict[str, Any], words: str) -> None:
    refusal = authz.pod_claim(status, AUDIENCE)
    assert isinstance(refusal, authz.Refusal) and refusal.code == 403 and words in refusal.message


def test_pod_checks() -> None:
    claim = authz.pod_claim(review(), AUDIENCE)
    assert isinstance(claim, authz.PodClaim)
    cases = [
        (job(), None, 403, "no longer exists"),
        (job(), pod(uid="recreated"), 403, "no longer exists"),
        (job(), pod(owner="another-job"), 403, "is not a pod of"),
        (job(conditions=[{"type": "Succeeded", "status": "True"}]), pod(), 409, "is Succeeded"),
        (job(), pod(deletionTimestamp="2026-01-01T00:00:00Z"), 409, "terminating"),
        (job(jobRestarts=1), pod(), 409, "attempt 0"),
    ]
    for j, p, code, words in cases:
        refusal = authz.admit(j, "PyTorchJob ns/mnist", claim, p)
        assert refusal is not None and refusal.code == code and words in refusal.message, (p, refusal)
    restarted = pod(labels={"kubetrain.io/attempt": "1"})
    assert authz.admit(job(jobRestarts=1), "t", claim, restarted) is None
    other_ns = authz.PodClaim("elsewhere", "mnist-worker-0", "pod-uid")
    refusal = authz.admit(job(), "t", other_ns, pod())
    assert refusal is not None and refusal.code == 403


# ---- rate limit and coalescing --------------------------------------------------------------


async def test_rate_limit_is_per_job_and_scales_with_its_pods() -> None:
    clock = FakeClock()
    c = Coalescer(clock, per_pod_rate=0.4, min_burst=10)
    assert all(c.admit("a", pods=2) is None for _ in range(10))  # the burst
    wait = c.admit("a", pods=2)
    assert wait == pytest.approx(1.25)  # 2 pods x 0.4/s: one token per 1.25 s
    assert c.admit("b", pods=2) is None  # another job is not affected
    await clock.advance(1.25)
    assert c.admit("a", pods=2) is None
    big = Coalescer(clock)
    assert sum(big.admit("big", pods=100) is None for _ in range(250)) == 200  # burst 2 x pods


async def test_writes_are_coalesced_to_one_per_interval() -> None:
    clock = FakeClock()
    c = Coalescer(clock, interval=5.0)
    c.offer("a", "target", {"progressPercentage": 1})
    items, wait = c.due()
    assert items == [("a", "target", {"progressPercentage": 1})] and wait is None  # first: at once
    c.offer("a", "target", {"progressPercentage": 2})
    c.offer("a", "target", {"progressPercentage": 3})
    items, wait = c.due()
    assert items == [] and wait == pytest.approx(5.0)
    await clock.advance(5.0)
    items, _ = c.due()
    assert items == [("a", "target", {"progressPercentage": 3})]  # only the latest
    c.result("a", False)
    assert c.failing("a")
    c.result("a", True)
    assert not c.failing("a") and c.written("a")
    await clock.advance(601)
    c.due()
    assert "a" not in c.jobs  # forgotten when idle


# ---- what pods get --------------------------------------------------------------------------


def layout(**annotations: str) -> JobLayout:
    return JobLayout(
        "PyTorchJob",
        "kubeflow.org/v1",
        "mnist",
        "ns",
        JOB_UID,
        {},
        {},
        annotations=annotations,
        resource="pytorchjobs",
        progress_ca_config_map="mnist-trainer-status",
    )


@pytest.mark.parametrize(("kind", "resource"), [("PyTorchJob", "pytorchjobs"), ("TFJob", "tfjobs")])
def test_a_jobs_layout_names_its_resource_and_ca_config_map(kind: str, resource: str) -> None:
    """The route, the token audience and the CA volume come from the job's own layout."""
    layout = prepare_job(jobs.job(kind, "mnist", {"Worker": 1})).layout
    assert layout is not None
    assert (layout.resource, layout.progress_ca_config_map) == (resource, "mnist-trainer-status")
    injection = ProgressInjection("https://p:10443", "PEM")
    assert config_map(layout, injection)["metadata"]["name"] == "mnist-trainer-status"
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    inject(layout, injection, spec)
    assert spec["containers"][0]["env"][0]["value"].endswith(f"/namespaces/ns/{resource}/mnist/status")


def test_injection_env_volume_and_ca() -> None:
    injection = ProgressInjection("https://kubetrain.sys.svc:10443/", "PEM")
    spec: dict[str, Any] = {
        "initContainers": [{"name": "init"}],
        "containers": [{"name": "pytorch", "env": [{"name": ts.ENV_URL, "value": "mine"}]}, {"name": "side"}],
        "volumes": [{"name": "data", "emptyDir": {}}],
    }
    inject(layout(), injection, spec)
    inject(layout(), injection, spec)  # idempotent
    url = "https://kubetrain.sys.svc:10443/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/mnist/status"
    side = {e["name"]: e["value"] for e in spec["containers"][1]["env"]}
    assert side == {
        ts.ENV_URL: url,
        ts.ENV_CA_CERT: "/var/run/secrets/kubeflow/trainer/ca.crt",
        ts.ENV_TOKEN: "/var/run/secrets/kubeflow/trainer/token",
    }
    assert spec["containers"][0]["env"][0]["value"] == "mine"  # the template's own value stays
    for c in [*spec["initContainers"], *spec["containers"]]:
        assert c["volumeMounts"] == [
            {"name": ts.VOLUME_NAME, "mountPath": "/var/run/secrets/kubeflow/trainer", "readOnly": True}
        ]
    assert [v["name"] for v in spec["volumes"]] == ["data", ts.VOLUME_NAME]
    sources = spec["volumes"][1]["projected"]["sources"]
    assert sources[0]["serviceAccountToken"] == {
        "audience": "kubeflow.org/v1/namespaces/ns/pytorchjobs/mnist/status",
        "expirationSeconds": 3600,
        "path": "token",
    }
    assert sources[1]["configMap"] == {
        "name": "mnist-trainer-status",
        "items": [{"key": "ca.crt", "path": "ca.crt"}],
    }
    assert config_map(layout(), injection)["data"] == {"ca.crt": "PEM"}


def test_opt_out() -> None:
    injection = ProgressInjection("https://x:1", "PEM")
    assert enabled(layout(), injection)
    assert not enabled(layout(**{"kubetrain.io/progress-reporting": "disabled"}), injection)
    assert not enabled(layout(), None)


# ---- stall detection ------------------------------------------------------------------------


def test_progress_deadline_comes_from_the_field_or_the_annotation() -> None:
    from kubetrain.operator import stall

    assert stall.deadline_seconds({"runPolicy": {"progressDeadlineSeconds": 60}}, {}) == 60
    assert stall.deadline_seconds({}, {ts.ANNOTATION_DEADLINE: "90"}) == 90
    assert (
        stall.deadline_seconds({"runPolicy": {"progressDeadlineSeconds": 60}}, {ts.ANNOTATION_DEADLINE: "9"})
        == 60
    )
    assert stall.deadline_seconds({}, {ts.ANNOTATION_DEADLINE: "soon"}) is None
    assert stall.deadline_seconds({}, {}) is None
    bad = ts.annotation_errors({ts.ANNOTATION_DEADLINE: "0"})
    assert [str(e) for e in bad] == [
        "metadata.annotations[kubetrain.io/progress-deadline-seconds]: Invalid: "
        'must be a positive integer number of seconds, not "0"'
    ]


def test_only_a_report_of_the_current_run_starts_the_clock() -> None:
    from datetime import UTC, datetime

    from kubetrain.operator import stall

    running = {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-01T00:10:00Z"}
    now = datetime(2026, 1, 1, 0, 20, tzinfo=UTC)

    def status(last: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"conditions": [running]}
        if last:
            out["trainerStatus"] = {"lastUpdatedTime": last, "progressPercentage": 12}
        return out

    assert not stall.check(status(None), 60, now, "PyTorchJob ns/a").stalled  # never reported
    assert not stall.check(status("2026-01-01T00:05:00Z"), 60, now, "t").stalled  # an earlier run's
    verdict = stall.check(status("2026-01-01T00:18:00Z"), 60, now, "PyTorchJob ns/a")
    assert verdict.stalled and "last report 2026-01-01T00:18:00Z at 12%" in verdict.message
    waiting = stall.check(status("2026-01-01T00:19:30Z"), 60, now, "t")
    assert not waiting.stalled and waiting.due == datetime(2026, 1, 1, 0, 20, 30, tzinfo=UTC)
    assert not stall.check(status("2026-01-01T00:18:00Z"), None, now, "t").stalled  # none declared


# ---- the TokenReview cache ------------------------------------------------------------------


def jwt(exp: float) -> str:
    import base64

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part({'exp': exp})}.sig"


async def test_review_cache_refreshes_early_and_never_outlives_the_token() -> None:
    from kubetrain.progress.reviews import ReviewCache, token_expiry

    clock = FakeClock()
    cache = ReviewCache(clock)
    ok = {"authenticated": True}
    long_lived = jwt(clock.now().timestamp() + 3600)
    assert token_expiry(long_lived) == clock.now().timestamp() + 3600
    cache.put(long_lived, "aud", ok)
    assert cache.get(long_lived, "aud") == (ok, False)
    assert cache.get(long_lived, "other") is None  # per audience
    await clock.advance(60)
    assert cache.get(long_lived, "aud") == (ok, True)  # still answered; due for a refresh
    await clock.advance(240)
    assert cache.get(long_lived, "aud") is None  # 300 s at most
    expiring = jwt(clock.now().timestamp() + 30)
    cache.put(expiring, "aud", ok)
    await clock.advance(30)
    assert cache.get(expiring, "aud") is None  # not past the token's own exp
    cache.put("opaque", "aud", {"authenticated": False, "error": "x"})
    await clock.advance(9)
    assert cache.get("opaque", "aud") is not None
    await clock.advance(1)
    assert cache.get("opaque", "aud") is None  # refusals: 10 s


def test_a_progress_write_wakes_the_planner_only_when_a_deadline_reads_it() -> None:
    from kubetrain.operator.stall import report_only

    def job(report: int | None, annotations: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
        st: dict[str, Any] = {"conditions": [{"type": "Running", "status": "True"}], **status}
        if report is not None:
            st["trainerStatus"] = {"progressPercentage": report, "lastUpdatedTime": "2026-11-25T12:00:00Z"}
        return {"metadata": {"annotations": annotations or {}}, "spec": {"runPolicy": {}}, "status": st}

    assert report_only(job(None), job(10))  # no deadline: the report changes no decision
    assert report_only(job(10), job(20))
    assert not report_only(job(10), job(10))  # nothing changed in the report: some other status edit
    assert not report_only(job(10), job(20, jobRestarts=1))  # more than the report changed
    deadline = {ts.ANNOTATION_DEADLINE: "60"}
    assert not report_only(job(10, deadline), job(20, deadline))  # the deadline moves
    with_field = job(20)
    with_field["spec"]["runPolicy"]["progressDeadlineSeconds"] = 60
    assert not report_only(job(10), with_field)

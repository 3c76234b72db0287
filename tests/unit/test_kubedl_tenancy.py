"""KubeDL's `kubedl.io/tenancy`: validated at admission naming the annotation and the field,
recorded as labels on the job (mutating webhook) and on every pod, selectable by TrainingPolicy
`jobSelector` — a tenant's quota and allowed images refuse that tenant's jobs only."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from admission import GPU_IMAGE, gpu_job, patched, policy_admission, review_of, training_policy
from jobs import rendered

from kubetrain.jobs.defaulting import default_job
from kubetrain.jobs.validation import validate_job
from kubetrain.webhook.mutate import mutate
from kubetrain.webhook.validate import validate

TENANCY = "kubedl.io/tenancy"


def tenanted(value: Any, **kw: Any) -> dict[str, Any]:
    job = gpu_job(**kw)
    job["metadata"].setdefault("annotations", {})[TENANCY] = (
        value if isinstance(value, str) else json.dumps(value)
    )
    return job


def test_mutate_labels_the_job_with_its_tenancy() -> None:
    job = tenanted({"tenant": "vision", "user": "alice", "region": "eu-west-1", "idc": ""})
    stored = patched(job, mutate(review_of(job)))
    assert stored["metadata"]["labels"] == {
        "tenancy.kubetrain.io/tenant": "vision",
        "tenancy.kubetrain.io/user": "alice",
        "tenancy.kubetrain.io/region": "eu-west-1",
    }


def test_labels_follow_the_annotation_and_leave_other_labels_alone() -> None:
    job = tenanted({"tenant": "nlp"})
    job["metadata"]["labels"] = {
        "team": "x",
        "tenancy.kubetrain.io/tenant": "vision",
        "tenancy.kubetrain.io/user": "bob",
    }
    labels = default_job(job).obj["metadata"]["labels"]
    assert labels == {"team": "x", "tenancy.kubetrain.io/tenant": "nlp"}
    plain = gpu_job()
    plain["metadata"]["labels"] = {"tenancy.kubetrain.io/tenant": "ops"}
    assert default_job(plain).obj["metadata"]["labels"] == {"tenancy.kubetrain.io/tenant": "ops"}


def test_every_pod_carries_the_tenancy_labels() -> None:
    pods = rendered(tenanted({"tenant": "vision", "user": "alice"}, workers=2))
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["labels"]["tenancy.kubetrain.io/tenant"] == "vision"
        assert pod["metadata"]["labels"]["tenancy.kubetrain.io/user"] == "alice"


@pytest.mark.parametrize(
    ("value", "path", "message"),
    [
        ("{tenant: vision}", "metadata.annotations[kubedl.io/tenancy]", "not valid JSON"),
        ('["vision"]', "metadata.annotations[kubedl.io/tenancy]", "must be a JSON object, not list"),
        ({"tenant": 7}, "metadata.annotations[kubedl.io/tenancy].tenant", "must be a string, not integer"),
        ({"tenant": "a b"}, "metadata.annotations[kubedl.io/tenancy].tenant", "recorded as a label value"),
        (
            {"tennant": "vision"},
            "metadata.annotations[kubedl.io/tenancy].tennant",
            "tenant, user, idc, region",
        ),
    ],
)
def test_malformed_tenancy_is_refused_naming_annotation_and_field(
    value: Any, path: str, message: str
) -> None:
    job = tenanted(value)
    errors = validate_job(default_job(job).obj).errors
    assert [e.path for e in errors] == [path]
    assert message in errors[0].message
    response = validate(review_of(default_job(job).obj))
    assert not response.allowed and path in response.message
    assert "labels" not in default_job(job).obj["metadata"]


TENANT_QUOTA = training_policy(
    "vision-quota",
    "vision",
    jobSelector={"matchLabels": {"tenancy.kubetrain.io/tenant": "vision"}},
    limits={"maxTotalResources": {"nvidia.com/gpu": 16}, "allowedImages": ["registry.example.com/vision/*"]},
)


def test_tenant_quota_refuses_that_tenants_over_quota_job_only() -> None:
    policies = policy_admission(TENANT_QUOTA)
    over = default_job(tenanted({"tenant": "vision"}, workers=3)).obj  # 24 GPUs
    response = validate(review_of(over), policies)
    assert not response.allowed
    assert (
        'policy "vision-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 24 exceeds 16'
        in response.message
    )
    assert f'[Worker].template.spec.containers[0].image: "{GPU_IMAGE}" is not allowed' in response.message
    other = default_job(tenanted({"tenant": "nlp"}, workers=3)).obj
    assert validate(review_of(other), policies).allowed
    untenanted = default_job(gpu_job(workers=3)).obj
    assert validate(review_of(untenanted), policies).allowed


def test_tenant_within_quota_with_allowed_image_is_admitted() -> None:
    job = tenanted({"tenant": "vision"}, workers=2)
    for rspec in job["spec"]["pytorchReplicaSpecs"].values():
        rspec["template"]["spec"]["containers"][0]["image"] = "registry.example.com/vision/bert:2"
    assert validate(review_of(default_job(job).obj), policy_admission(TENANT_QUOTA)).allowed


def test_job_selector_picks_which_policy_defaults_apply() -> None:
    queue = training_policy(
        "vision-queue",
        "vision",
        jobSelector={
            "matchExpressions": [
                {"key": "tenancy.kubetrain.io/tenant", "operator": "In", "values": ["vision"]}
            ]
        },
        defaults={"runPolicy": {"schedulingPolicy": {"queue": "vision"}}},
    )
    job = tenanted({"tenant": "vision"})
    stored = patched(job, mutate(review_of(job), policies=policy_admission(queue)))
    assert stored["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "vision"
    other = tenanted({"tenant": "nlp"})
    stored = patched(other, mutate(review_of(other), policies=policy_admission(queue)))
    assert "queue" not in (stored["spec"]["runPolicy"].get("schedulingPolicy") or {})


def test_invalid_job_selector_is_refused() -> None:
    bad = copy.deepcopy(TENANT_QUOTA)
    bad["spec"]["jobSelector"] = {
        "matchExpressions": [{"key": "tenancy.kubetrain.io/tenant", "operator": "Is"}]
    }
    response = validate(review_of(bad))
    assert not response.allowed and "spec.jobSelector.matchExpressions[0].operator" in response.message


def test_tenant_metric_series_are_capped() -> None:
    from kubetrain.operator.tenantmetrics import OTHER_TENANT, TENANT_JOBS, TenantLabels, tenant_of

    labels = TenantLabels(cap=2)
    assert [labels.value(t) for t in ("a", "b", "a", "c", "d", "", "b")] == [
        "a",
        "b",
        "a",
        OTHER_TENANT,
        OTHER_TENANT,
        "",
        "b",
    ]
    assert tenant_of(tenanted({"tenant": "vision"})) == "vision"  # from the annotation
    assert tenant_of(default_job(tenanted({"tenant": "vision"})).obj) == "vision"  # from the label
    assert tenant_of(gpu_job()) == ""
    from kubetrain.operator.tenantmetrics import count_tenant_job

    before = TENANT_JOBS.labels(tenant="metrics-tenant", event="created")._value.get()
    count_tenant_job(tenanted({"tenant": "metrics-tenant"}), "created")
    assert TENANT_JOBS.labels(tenant="metrics-tenant", event="created")._value.get() == before + 1

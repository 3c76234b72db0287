"""TrainingPolicy in /mutate and /validate: defaults written into the job, limits enforced."""

from __future__ import annotations

import copy

from admission import gpu_job, patched, policy_admission, review_of, training_policy

from kubetrain.jobs.defaulting import default_job
from kubetrain.webhook.mutate import mutate
from kubetrain.webhook.validate import validate

QUEUE = training_policy(
    "team-queue",
    "vision",
    defaults={
        "runPolicy": {"cleanPodPolicy": "All", "schedulingPolicy": {"queue": "vision"}},
        "labels": {"team": "vision"},
    },
)
QUOTA = training_policy("gpu-quota", "vision", limits={"maxTotalResources": {"nvidia.com/gpu": 32}})


def test_mutate_writes_policy_defaults_after_the_built_in_ones() -> None:
    job = gpu_job()
    stored = patched(job, mutate(review_of(job), policies=policy_admission(QUEUE)))
    rp = stored["spec"]["runPolicy"]
    assert rp["cleanPodPolicy"] == "All"  # the policy replaces the built-in Running
    assert rp["schedulingPolicy"]["queue"] == "vision"
    assert rp["suspend"] is False  # built-in defaults still there
    assert stored["metadata"]["labels"] == {"team": "vision"}
    # Exactly the built-in defaulting plus the policy's fields.
    assert stored["spec"]["pytorchReplicaSpecs"] == default_job(job).obj["spec"]["pytorchReplicaSpecs"]


def test_mutate_keeps_user_values_and_ignores_other_teams() -> None:
    job = gpu_job(cleanPodPolicy="None")
    stored = patched(job, mutate(review_of(job), policies=policy_admission(QUEUE)))
    assert stored["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    other = patched(job, mutate(review_of(job), policies=policy_admission(QUEUE, team="nlp")))
    assert other == default_job(job).obj


def test_mutate_does_not_apply_policy_defaults_on_update() -> None:
    job = default_job(gpu_job()).obj
    stored = patched(job, mutate(review_of(job, "UPDATE", old=job), policies=policy_admission(QUEUE)))
    assert "schedulingPolicy" not in stored["spec"]["runPolicy"]


def test_validate_denies_over_quota_naming_policy_field_and_limit() -> None:
    job = default_job(gpu_job(workers=6)).obj
    response = validate(review_of(job), policy_admission(QUOTA))
    assert not response.allowed
    assert response.status_code == 403
    assert (
        response.message
        == 'policy "gpu-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 48 exceeds 32'
    )
    assert validate(review_of(default_job(gpu_job(workers=4)).obj), policy_admission(QUOTA)).allowed


def test_validate_warn_mode_admits_with_the_same_text_as_warning() -> None:
    warn = copy.deepcopy(QUOTA)
    warn["spec"]["enforcement"] = "Warn"
    job = default_job(gpu_job(workers=6)).obj
    response = validate(review_of(job), policy_admission(warn))
    assert response.allowed
    assert (
        'policy "gpu-quota": spec.pytorchReplicaSpecs[Worker]: total nvidia.com/gpu 48 exceeds 32'
        in response.warnings
    )


def test_update_denies_only_new_violations() -> None:
    policies = policy_admission(QUOTA)
    old = default_job(gpu_job(workers=6)).obj  # already over quota (policy came later)
    suspended = copy.deepcopy(old)
    suspended["spec"]["runPolicy"]["suspend"] = True
    response = validate(review_of(suspended, "UPDATE", old=old), policies)
    assert response.allowed
    assert any("48 exceeds 32" in w for w in response.warnings)
    within = default_job(gpu_job(workers=2)).obj
    grown = copy.deepcopy(within)
    grown["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 5
    grown["spec"]["runPolicy"]["suspend"] = True
    within["spec"]["runPolicy"]["suspend"] = True
    response = validate(review_of(grown, "UPDATE", old=within), policies)
    assert not response.allowed
    assert response.message.endswith("total nvidia.com/gpu 40 exceeds 32")


def test_metadata_only_update_removing_a_required_label_is_denied() -> None:
    policies = policy_admission(training_policy("labels", "vision", limits={"requiredLabels": ["team"]}))
    old = default_job(gpu_job()).obj
    old["metadata"]["labels"] = {"team": "vision"}
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {}
    response = validate(review_of(new, "UPDATE", old=old), policies)
    assert not response.allowed
    assert response.message == 'policy "labels": metadata.labels[team]: required label is missing'


def test_invalid_training_policy_is_refused_and_a_valid_one_admitted() -> None:
    bad = training_policy("bad", "vision", limits={"maxReplicasPerJob": -1, "allowedImages": ["[x"]})
    response = validate(review_of(bad))
    assert not response.allowed
    assert response.message == (
        'TrainingPolicy "bad" is invalid: [spec.limits.maxReplicasPerJob: Invalid: -1: '
        "must be greater than or equal to 0, "
        "spec.limits.allowedImages[0]: Invalid: \"[x\": has an unclosed '[' (character class)]"
    )
    assert validate(review_of(QUOTA)).allowed
    assert validate(review_of(bad, "DELETE")).allowed


def test_without_policies_the_webhook_behaves_as_before() -> None:
    job = default_job(gpu_job(workers=6)).obj
    assert validate(review_of(job)).allowed
    assert (
        mutate(review_of(gpu_job())).patch == mutate(review_of(gpu_job()), policies=policy_admission()).patch
    )


def test_trainjob_create_gets_the_policy_defaults_a_trainjob_has_fields_for() -> None:
    from kubetrain.webhook.trainer import mutate_trainer

    policy = training_policy(
        "a-defaults",
        "vision",
        kinds=["TrainJob"],
        defaults={
            "labels": {"cost-center": "vision"},
            "runPolicy": {
                "activeDeadlineSeconds": 7200,
                "suspend": True,
                "managedBy": "kueue.x-k8s.io/multikueue",
                "backoffLimit": 2,
                "ttlSecondsAfterFinished": 600,
            },
        },
    )
    later = training_policy("b-later", "vision", defaults={"runPolicy": {"activeDeadlineSeconds": 60}})
    tj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": "vision", "labels": {"cost-center": "mine"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }
    response = mutate_trainer(review_of(tj), policy_admission(policy, later))
    out = patched(tj, response)
    assert out["metadata"]["labels"] == {"cost-center": "mine"}  # the user's value wins
    assert out["spec"]["activeDeadlineSeconds"] == 7200  # the first policy by name wins
    assert out["spec"]["suspend"] is True
    assert out["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert out["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert "runPolicy" not in out["spec"]
    suffix = ": not applied, no TrainJob field takes it"
    assert sorted(response.warnings) == [
        'policy "a-defaults": defaults.runPolicy.backoffLimit' + suffix,
        'policy "a-defaults": defaults.runPolicy.ttlSecondsAfterFinished' + suffix,
    ]
    # set by the user: kept; an UPDATE gets no policy defaults
    mine = copy.deepcopy(tj)
    mine["spec"].update(activeDeadlineSeconds=30, suspend=False)
    out = patched(mine, mutate_trainer(review_of(mine), policy_admission(policy)))
    assert out["spec"]["activeDeadlineSeconds"] == 30 and out["spec"]["suspend"] is False
    out = patched(tj, mutate_trainer(review_of(tj, "UPDATE", old=tj), policy_admission(policy)))
    assert "activeDeadlineSeconds" not in out["spec"]
    # a manager a TrainJob cannot have (the v1 kinds' kubetrain.io/operator): Trainer's stays, warned
    own = training_policy(
        "own", "vision", kinds=["TrainJob"], defaults={"runPolicy": {"managedBy": "kubetrain.io/operator"}}
    )
    response = mutate_trainer(review_of(tj), policy_admission(own))
    assert patched(tj, response)["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    assert response.warnings == [
        'policy "own": defaults.runPolicy.managedBy: not applied, no TrainJob field takes it'
    ]

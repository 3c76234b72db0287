"""A runtimePatches change while the TrainJob's jobs still run, held to Kubeflow Trainer 2.3's
JobSet plug-in tests (pkg/runtime/framework/plugins/jobset/jobset_test.go, TestValidate): each
case is one of Trainer's, by its name. Trainer reads its JobSet's
`status.replicatedJobsStatus[].active`; kubetrain runs no JobSet and the webhook reads the same
counts from the stored TrainJob's `status.jobsStatus` (the review's oldObject). Trainer's cases
change a patch's `serviceAccountName`, which its CRD (not the plug-in under test) makes
immutable; here the patch's `nodeSelector` changes instead, so the rule is the only one at work."""

from __future__ import annotations

from typing import Any

import pytest
from admission import review_of
from trainjobs import replicated_jobs, trainer_test_runtime

from kubetrain.jobs.trainjob.specrules import active_job_errors
from kubetrain.jobs.trainjob.validate import default_trainjob, validate_trainjob
from kubetrain.webhook.trainer import TrainerFacts, validate_trainer

Obj = dict[str, Any]
RUNTIME = trainer_test_runtime("testing")
NOT_SUSPENDED = (
    "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is "
    "suspended before or after the update"
)


def still_active(step: str) -> str:
    return (
        "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's "
        f"ReplicatedJob {step} is still active"
    )


def trainjob(suspend: bool, selector: str, active: dict[str, int] | None = None, **spec: Any) -> Obj:
    """TrainJob default/test with one runtime patch of the node job (`nodeSelector: {pool:
    <selector>}`); `active`: its status' jobsStatus, active jobs per replicated job (None: no
    status — Trainer's "JobSet does not exist")."""
    job = default_trainjob(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "test", "namespace": "default"},
            "spec": {
                "runtimeRef": {"name": "testing", "kind": "TrainingRuntime"},
                "suspend": suspend,
                "runtimePatches": [
                    {
                        "manager": "test.io/manager",
                        "trainingRuntimeSpec": {
                            "template": {
                                "spec": replicated_jobs({"node": {"nodeSelector": {"pool": selector}}})
                            }
                        },
                    }
                ],
                **spec,
            },
        }
    )
    if active is not None:
        job["status"] = {
            "jobsStatus": [
                {"name": name, "ready": 0, "succeeded": 0, "failed": 0, "active": n, "suspended": 0}
                for name, n in active.items()
            ]
        }
    return job


# (Trainer's case, old suspend (None: a create), new suspend, patch changed, JobSet's active
# jobs per replicated job (None: no JobSet), the errors)
CASES = [
    ("allow runtimePatches when creating a new trainJob", None, False, True, None, []),
    ("allow updates to trainJob with no changes to runtimePatches", False, False, False, {"node": 2}, []),
    (
        "forbid changes to runtimePatches when trainJob is not suspended",
        False,
        False,
        True,
        None,
        [NOT_SUSPENDED],
    ),
    (
        "allow changes to runtimePatches when trainJob is suspended and jobSet does not exist",
        True,
        True,
        True,
        None,
        [],
    ),
    (
        "allow atomic update: modify runtimePatches and unsuspend trainJob in a single request",
        True,
        False,
        True,
        None,
        [],
    ),
    (
        "allow atomic update: modify runtimePatches and suspend trainJob in a single request",
        False,
        True,
        True,
        None,
        [],
    ),
    (
        "allow changes to runtimePatches when trainJob is suspended and jobSet exists but is inactive",
        True,
        True,
        True,
        {"dataset-initializer": 0, "node": 0},
        [],
    ),
    (
        "forbid changes to runtimePatches when trainJob is suspended but jobSet has an active replicatedJob",
        True,
        True,
        True,
        {"dataset-initializer": 0, "node": 2},
        [still_active("node")],
    ),
    (
        "forbid atomic update: suspending trainJob with runtimePatches change is rejected when jobSet "
        "has an active replicatedJob",
        False,
        True,
        True,
        {"node": 2},
        [still_active("node")],
    ),
    (
        "forbid changes to runtimePatches when trainJob is suspended but has multiple active replicatedJobs",
        True,
        True,
        True,
        {"dataset-initializer": 1, "node": 2},
        [still_active("dataset-initializer"), still_active("node")],
    ),
]


@pytest.mark.parametrize(("case", "old_suspend", "new_suspend", "changed", "active", "want"), CASES)
def test_trainers_cases(
    case: str,
    old_suspend: bool | None,
    new_suspend: bool,
    changed: bool,
    active: dict[str, int] | None,
    want: list[str],
) -> None:
    old = None if old_suspend is None else trainjob(old_suspend, "before", active)
    new = trainjob(new_suspend, "after" if changed else "before", active)
    assert [str(e) for e in validate_trainjob(new, old, RUNTIME)] == want, case
    # through the webhook: the review's oldObject carries the stored status
    request = review_of(new, "CREATE" if old is None else "UPDATE", old)
    response = validate_trainer(request, TrainerFacts(runtime=RUNTIME))
    assert response.allowed == (not want), case
    for message in want:
        assert message in (response.message or ""), case


def test_the_patch_time_alone_is_no_change() -> None:
    """The defaulter keeps an unchanged patch's time; a `time` that differs alone changes nothing
    the pods get, so it is not refused either."""
    old = trainjob(True, "before", {"node": 1})
    new = trainjob(True, "before", {"node": 1})
    old["spec"]["runtimePatches"][0]["time"] = "2026-11-26T09:00:00Z"
    new["spec"]["runtimePatches"][0]["time"] = "2026-11-26T10:00:00Z"
    assert active_job_errors(new["spec"], old) == []


def test_a_trainjob_multikueue_runs_elsewhere_is_not_held_by_the_copied_status() -> None:
    """MultiKueue copies the worker cluster's status; Trainer finds no JobSet in the manager
    cluster, so the change is allowed."""
    remote = {"managedBy": "kueue.x-k8s.io/multikueue"}
    old = trainjob(True, "before", {"node": 2}, **remote)
    new = trainjob(True, "after", {"node": 2}, **remote)
    assert validate_trainjob(new, old, RUNTIME) == []


def test_only_the_stored_status_counts() -> None:
    """The request's own status (a client may send any) is not read: the stored one is."""
    old = trainjob(True, "before", {"node": 0})
    new = trainjob(True, "after", {"node": 3})
    assert validate_trainjob(new, old, RUNTIME) == []
    old = trainjob(True, "before", {"node": 1})
    new = trainjob(True, "after", {"node": 0})
    assert [str(e) for e in validate_trainjob(new, old, RUNTIME)] == [still_active("node")]

"""Kubeflow Trainer's `x-kubernetes-validations` (CEL) rules, as its generated CRDs carry them
(manifests/base/crds/trainer.kubeflow.org_*.yaml at Trainer 8c0f505, from the
`+kubebuilder:validation:XValidation` markers of pkg/apis/trainer/v1alpha1/*.go and of the JobSet
types its runtimes embed), keyed by the schema path they sit at (`[]`: an array's items); the
rules on counts and names are `trainercrds.py`'s markers.

A real kube-apiserver evaluates them when it validates the object against the CRD's schema,
before any validating admission webhook is called (apiserver's registry `Store.Create` /
`Store.Update` run the strategy's `Validate` / `ValidateUpdate` before `createValidation` /
`updateValidation`), so a request they refuse gets Trainer's message alone, and they hold with
kubetrain's webhook absent or failing open. Rules naming `oldSelf` (transition rules) run on
update only, where the field is set in both the old and the new object
(apiextensions-apiserver schema/cel `Validator.validateExpressions`).

kubetrain's webhook (`kubetrain.jobs.trainjob.validate`) checks the same things with field paths,
for `kubetrain validate` offline and for API servers that do not evaluate CEL."""

from __future__ import annotations

from typing import Any

from kubetrain.jobs.listkeys import node

Rule = dict[str, str]

IMMUTABLE: Rule = {"rule": "self == oldSelf", "message": "field is immutable"}
# JobSet's wording (jobset_types.go), which Trainer's runtime CRDs carry for the JobSet template.
JOBSET_IMMUTABLE: Rule = {"rule": "self == oldSelf", "message": "Value is immutable"}
STORAGE_URI: Rule = {
    "rule": "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
    "message": "storageUri may be empty, or it must be a valid URI (scheme://...)",
}

# trainjob_types.go: TrainJobSpec, DatasetInitializer, ModelInitializer, TrainerStatus.
# Not carried (docs/behaviour.md, "TrainJob"): `self == oldSelf` on `spec.trainer` and
# `spec.initializer` — kubetrain lets a suspended TrainJob change them (its pods are made from the
# TrainJob when it resumes), which that rule would make impossible; and the rules inside
# `spec.runtimePatches[]`, whose pod-spec patch kubetrain's schema keeps open (the webhook checks
# them: `kubetrain.jobs.trainjob.specrules`).
TRAINJOB_RULES: dict[str, list[Rule]] = {
    "spec.runtimeRef": [IMMUTABLE],
    "spec.initializer.dataset.storageUri": [STORAGE_URI],
    "spec.initializer.model.storageUri": [STORAGE_URI],
    "spec.activeDeadlineSeconds": [IMMUTABLE],
    "spec.managedBy": [
        {
            "rule": "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']",
            "message": "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
            "kueue.x-k8s.io/multikueue if set",
        },
        IMMUTABLE,
    ],
    "status.trainerStatus": [
        {
            "rule": "has(self.lastUpdatedTime)",
            "message": "lastUpdatedTime is required when trainerStatus is present",
        }
    ],
}

# trainingruntime_types.go (MLPolicy, EnvInjectionTarget) and jobset_types.go (JobSetSpec,
# ReplicatedJob.DependsOn: a list keyed by name, so `self == oldSelf` holds for the same entries in
# any order). Not carried: JobSet's `volumeClaimPolicies[]` namespace rule
# (the items are kept open; the webhook checks it: `kubetrain.jobs.trainjob.volumeclaims`).
RUNTIME_RULES: dict[str, list[Rule]] = {
    "spec.mlPolicy": [
        {
            "rule": "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
            ".filter(x, x).size() <= 1",
            "message": "Only one of the policy can be configured",
        }
    ],
    "spec.mlPolicy.torch.envInjection.targets[].containerNames": [
        {
            "rule": "!self.exists(c, c == 'node')",
            "message": "containerNames must not include the main node container because PET_* envs "
            "are always injected into it",
        }
    ],
    "spec.template.spec": [
        {
            "rule": "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' "
            "&& self.replicatedJobs.exists(x, has(x.dependsOn)))",
            "message": "StartupPolicy and DependsOn APIs are mutually exclusive",
        }
    ],
    "spec.template.spec.replicatedJobs[].dependsOn": [JOBSET_IMMUTABLE],
    "spec.template.spec.network": [JOBSET_IMMUTABLE],
    "spec.template.spec.successPolicy": [JOBSET_IMMUTABLE],
    "spec.template.spec.failurePolicy": [JOBSET_IMMUTABLE],
    "spec.template.spec.startupPolicy": [JOBSET_IMMUTABLE],
    "spec.template.spec.volumeClaimPolicies": [JOBSET_IMMUTABLE],
}

# kubetrain's own rule, not Trainer's: JobSet's `restartStrategy: InPlaceRestart` (KEP 467, behind
# JobSet's alpha `InPlaceRestart` feature gate, off by default: jobset_webhook.go refuses it then)
# needs JobSet's in-place restart agent in every pod, which reads the JobSet object's
# `status.{previous,current}InPlaceRestartAttempt`; kubetrain makes the pods without a JobSet
# object. The enum keeps the value (as JobSet's and Trainer's CRDs list it) so that this rule,
# not the enum's `Unsupported value` (after which the API server runs no rule:
# apiextensions-apiserver registry/customresource/strategy.go `hasBlockingErr`), answers with why.
# `kubetrain.jobs.trainjob.failurepolicy.validate` gives the webhook the same message.
IN_PLACE_RESTART_MESSAGE = (
    'InPlaceRestart is not supported, supported values: "Recreate", "BlockingRecreate": JobSet\'s '
    "in-place restart needs its restart agent sidecar, which reads the JobSet object's status, and "
    "kubetrain runs a TrainJob's pods without a JobSet object"
)
IN_PLACE_RESTART: Rule = {"rule": "self != 'InPlaceRestart'", "message": IN_PLACE_RESTART_MESSAGE}
# kubetrain's own rule, not (yet) Trainer's: `podGroupPolicy` is a one-of ("Only one of its
# members may be specified", trainingruntime_types.go `PodGroupPolicySource`), which Trainer 2.3's
# CRD does not enforce (Kubeflow Trainer issue 4060; pull request 4061 adds a rule of MLPolicy's
# shape): a runtime naming both was admitted, and under it kubetrain silently took coscheduling
# (`kubetrain.jobs.trainjob.gang.gang_of`; under an operator running Volcano, no gang at all)
# while Trainer's two plugins each made a PodGroup.
ONE_POD_GROUP_POLICY_MESSAGE = (
    "Only one of the podGroupPolicy sources can be configured: coscheduling or volcano"
)
ONE_POD_GROUP_POLICY: Rule = {
    "rule": "[has(self.coscheduling), has(self.volcano)].filter(x, x).size() <= 1",
    "message": ONE_POD_GROUP_POLICY_MESSAGE,
}
# kubetrain's own rule, not Trainer's: the JobSet template's `managedBy` hands the JobSet object
# Trainer makes to another controller (JobSet's then skips it); kubetrain makes no JobSet object
# and would run the pods anyway, so only JobSet's own controller is admitted.
# `kubetrain.jobs.trainjob.jobsetpolicy.managed_by_errors` gives the webhook the same message.
JOBSET_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"  # JobSet's managedBy default
JOBSET_MANAGED_BY_MESSAGE = (
    f'only "{JOBSET_CONTROLLER}" (or unset): kubetrain runs a TrainJob\'s pods itself, with no JobSet '
    "object for another controller to manage; a TrainJob's own spec.managedBy hands it to another "
    "controller (kueue.x-k8s.io/multikueue)"
)
JOBSET_MANAGED_BY: Rule = {"rule": f"self == '{JOBSET_CONTROLLER}'", "message": JOBSET_MANAGED_BY_MESSAGE}
KUBETRAIN_RUNTIME_RULES: dict[str, list[Rule]] = {
    "spec.template.spec.failurePolicy.restartStrategy": [IN_PLACE_RESTART],
    "spec.template.spec.managedBy": [JOBSET_MANAGED_BY],
    "spec.podGroupPolicy": [ONE_POD_GROUP_POLICY],
}


def add_rules(schema: dict[str, Any], table: dict[str, list[Rule]]) -> None:
    """Append each rule of `table` to the `x-kubernetes-validations` of its node in `schema`."""
    for path, rules in table.items():
        target = node(schema, path)
        target.setdefault("x-kubernetes-validations", []).extend(dict(r) for r in rules)

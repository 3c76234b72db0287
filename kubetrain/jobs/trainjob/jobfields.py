"""Of a replicated job's batch/v1 JobSpec (`spec.template.spec.replicatedJobs[i].template.spec`):
what kubetrain applies — it makes the pods itself, without a Job —, the values it runs as, and a
warning for each other field a runtime sets (docs/behaviour.md §11, "Of the JobSet template").

- `podReplacementPolicy`: a TrainJob pod keeps its name (`<tj>-<step>-<jobIndex>-<index>`) from
  one attempt to the next, so its replacement is created only once the old pod is gone from the
  API server — never while it terminates. That is `Failed` (batch/v1 types.go: "wait until a
  previously created Pod is fully terminated … before creating a replacement Pod"), or later
  when a finalizer keeps a terminal pod; `Failed` is admitted without a warning.
  `TerminatingOrFailed` (replace a pod as soon as it has a deletionTimestamp; the Job API's
  default without a podFailurePolicy) is admitted with a warning saying kubetrain waits.
- `completionMode`: every TrainJob pod has its completion index (label, annotation, hostname), as
  under `Indexed` (JobSet's default); `NonIndexed` is admitted with a warning.
- The Job template's `metadata`: a label other than `trainer.kubeflow.org/trainjob-ancestor-step`
  (which names the step) and an annotation other than JobSet's exclusive-placement ones (which
  reach the pods) would label the Job object only: each is warned about (`metadata_warnings`).
- Both are held to the Job API's values (pkg/apis/batch/validation `validateJobSpec`,
  `validatePodReplacementPolicy`: `field.NotSupported` with the sorted supported values); with a
  podFailurePolicy, `podfailurepolicy` refuses any podReplacementPolicy but `Failed`.

Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api.errors import FieldError, not_supported
from kubetrain.api.trainer import constants as c
from kubetrain.jobs import jobsetplacement, jobsuccess

# What kubetrain applies; `completions` is Trainer's too: it writes the parallelism there
# (syncParallelCount).
APPLIED_JOB_FIELDS = (
    "parallelism",
    "backoffLimit",
    "podFailurePolicy",
    "activeDeadlineSeconds",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    jobsuccess.FIELD,
    "template",
)
UNWARNED_JOB_FIELDS = ("completions", *APPLIED_JOB_FIELDS)
# The value of a field that is what kubetrain does anyway (not warned about).
RUN_AS = {"podReplacementPolicy": "Failed", "completionMode": "Indexed"}
POD_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
COMPLETION_MODES = ("Indexed", "NonIndexed")
_WHY = {
    "podReplacementPolicy": "a TrainJob pod keeps its name, so its replacement is created once the old "
    "pod is gone, never while it terminates (as with Failed)",
    "completionMode": "every TrainJob pod has its completion index (as with Indexed)",
}


def validate(job_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """The Job API's values of completionMode and (without a podFailurePolicy, whose rule is
    `podfailurepolicy`'s) podReplacementPolicy. `path`: the Job spec's."""
    errors: list[FieldError] = []
    mode = job_spec.get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        errors.append(not_supported(f"{path}.completionMode", mode, COMPLETION_MODES))
    replacement = job_spec.get("podReplacementPolicy")
    if (
        replacement is not None
        and job_spec.get("podFailurePolicy") is None
        and replacement not in POD_REPLACEMENT_POLICIES
    ):
        errors.append(not_supported(f"{path}.podReplacementPolicy", replacement, POD_REPLACEMENT_POLICIES))
    return errors


def warnings(job_spec: Mapping[str, Any], path: str) -> list[str]:
    """One warning per field of the Job spec kubetrain does not apply, in name order."""
    out: list[str] = []
    applied = ", ".join(APPLIED_JOB_FIELDS[:-1]) + f" and {APPLIED_JOB_FIELDS[-1]}"
    for key in sorted(job_spec):
        if key in UNWARNED_JOB_FIELDS or job_spec[key] == RUN_AS.get(key, object()):
            continue
        if key in RUN_AS and job_spec[key] in (POD_REPLACEMENT_POLICIES + COMPLETION_MODES):
            out.append(f"{path}.{key}: {job_spec[key]} not applied: {_WHY[key]}")
            continue
        out.append(
            f"{path}.{key}: not applied: kubetrain creates the replicated job's pods itself, without a "
            f"Job; of the Job spec it applies {applied}"
        )
    return out


# What of a Job template's metadata kubetrain reads: the step's ancestor label, JobSet's
# exclusive-placement annotations (they reach the pods: `jobsetplacement.placement_annotations`).
READ_JOB_LABELS = (c.LABEL_ANCESTOR,)
READ_JOB_ANNOTATIONS = (jobsetplacement.EXCLUSIVE_KEY, jobsetplacement.NODE_SELECTOR_STRATEGY_KEY)


def metadata_warnings(job_template: Mapping[str, Any], path: str) -> list[str]:
    """One warning per label or annotation of a replicated job's Job template (`path`: the
    template's) that would label the Job object only, in name order."""
    meta = job_template.get("metadata")
    if not isinstance(meta, Mapping):
        return []
    out: list[str] = []
    for field, read in (("labels", READ_JOB_LABELS), ("annotations", READ_JOB_ANNOTATIONS)):
        values = meta.get(field)
        for key in sorted(values) if isinstance(values, Mapping) else []:
            if key not in read:
                out.append(
                    f"{path}.metadata.{field}[{key}]: not applied: it would be on the Job object, and "
                    "kubetrain creates the replicated job's pods without one (put it in the pod "
                    "template's metadata)"
                )
    return out

"""Whether the operator may serve the API groups it is configured for (`--api-groups`).

Serving `kubeflow.org` replaces Kubeflow's training operator: both must never reconcile the same
jobs. Before the controller starts, every job kind's CRD in a group other than kubetrain.io is
read: one missing (install it: `kubetrain crds --group kubeflow.org`) or one kubetrain did not
generate — it lacks the label `app.kubernetes.io/part-of: kubetrain` every CRD kubetrain
generates carries, so Kubeflow's operator (or another) installed it — stops the start-up with a
message that says what to do; so does one kubetrain generated before a kind's versions changed
(mpijobs.kubeflow.org serving v2beta1 and v1). A 403 (no RBAC to read CRDs) is logged and not checked.
"""

from __future__ import annotations

import logging

from kubetrain.api.groups import KUBETRAIN_GROUP, TRAINER_GROUP
from kubetrain.api.trainer.constants import PLURALS as TRAINER_PLURALS
from kubetrain.frameworks.registry import FRAMEWORKS, converted_versions, group_serves, job_version
from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.resources import CUSTOM_RESOURCE_DEFINITIONS

log = logging.getLogger(__name__)

PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF_VALUE = "kubetrain"


class ApiGroupRefused(Exception):
    """The operator must not serve a configured API group; the message says why and what to do."""


def crd_names(group: str) -> list[str]:
    if group == TRAINER_GROUP:
        return [f"{plural}.{group}" for plural in TRAINER_PLURALS.values()]
    return [f"{fw.plural}.{group}" for kind, fw in FRAMEWORKS.items() if group_serves(group, kind)]


# Who else installs a group's CRDs, and whose controller would then reconcile the same objects.
_OWNER = {
    TRAINER_GROUP: (
        "Kubeflow Trainer's manifests install these and its controller (with JobSet) would "
        "reconcile the same TrainJobs. Uninstall Kubeflow Trainer's controller manager and its "
        "webhook configurations"
    ),
}
_DEFAULT_OWNER = (
    "Kubeflow's training operator installs these and would reconcile the same jobs. "
    "Uninstall Kubeflow's training operator (its Deployment and webhook configuration)"
)


async def check_api_groups(client: KubeClient, groups: tuple[str, ...]) -> None:
    """Raise `ApiGroupRefused` when a served group's job CRDs are missing or not kubetrain's."""
    for group in groups:
        if group == KUBETRAIN_GROUP:
            continue  # kubetrain's own group: its CRDs come with the chart
        missing: list[str] = []
        foreign: list[str] = []
        outdated: list[str] = []
        kinds = {f"{fw.plural}.{group}": fw.kind for fw in FRAMEWORKS.values()}
        for name in crd_names(group):
            try:
                crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, None, name)
            except ApiError as err:
                if err.is_not_found:
                    missing.append(name)
                    continue
                if err.status == 403:
                    log.warning(
                        "cannot read CustomResourceDefinition %s (%s): not checking that %s is "
                        "kubetrain's to serve; grant get on customresourcedefinitions",
                        name,
                        err,
                        group,
                    )
                    return
                raise
            labels = (crd.get("metadata") or {}).get("labels") or {}
            if labels.get(PART_OF_LABEL) != PART_OF_VALUE:
                foreign.append(name)
                continue
            kind = kinds.get(name)
            served = {v.get("name") for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")}
            wanted = {job_version(kind, group), *converted_versions(kind, group)} if kind else set()
            if not wanted <= served:
                have, need = ", ".join(sorted(map(str, served))), ", ".join(sorted(wanted))
                outdated.append(f"{name} (serves {have}; needs {need})")
        if foreign:
            raise ApiGroupRefused(
                f"refusing to serve {group}: CustomResourceDefinition {', '.join(foreign)} exists and "
                f"was not installed by kubetrain (no label {PART_OF_LABEL}={PART_OF_VALUE}); "
                f"{_OWNER.get(group, _DEFAULT_OWNER)}, "
                f"then replace the CRDs, keeping the stored jobs: `kubetrain crds --group {group} | "
                "kubectl replace -f -` — or serve only kubetrain.io (--api-groups kubetrain.io)"
            )
        if outdated:
            raise ApiGroupRefused(
                f"cannot serve {group}: CustomResourceDefinition {'; '.join(outdated)} is from an older "
                f"kubetrain; replace it, keeping the stored jobs: `kubetrain crds --group {group} | "
                "kubectl replace -f -`"
            )
        if missing:
            raise ApiGroupRefused(
                f"cannot serve {group}: CustomResourceDefinition {', '.join(missing)} is not "
                f"installed; install them with `kubetrain crds --group {group} | kubectl apply -f -`"
            )

"""API resources kubetrain reads and writes, and how their REST paths are built.

    PODS.path("ns")                           -> /api/v1/namespaces/ns/pods
    PODS.path("ns", "p-0")                    -> /api/v1/namespaces/ns/pods/p-0
    job_resource("TFJob").path("ns", "j", "status")
                                              -> /apis/kubetrain.io/v1/namespaces/ns/tfjobs/j/status
    LEASES.api_version                        -> coordination.k8s.io/v1

`JOB_RESOURCES` (kind -> ResourceRef) is derived from `kubetrain.frameworks.registry`, so a new
framework gets its resource without touching this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from kubetrain import GROUP as API_GROUP
from kubetrain import VERSION as API_VERSION
from kubetrain.api.errors import QUOTE
from kubetrain.api.gangschedulers import GANG_SCHEDULERS, SCHEDULER_PLUGINS, VOLCANO
from kubetrain.api.groups import job_groups
from kubetrain.frameworks.registry import FRAMEWORKS, group_serves, job_version


def _seg(value: str) -> str:
    return quote(value, safe="")


@dataclass(frozen=True)
class ResourceRef:
    group: str  # "" for the core API
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """The `apiVersion` of objects of this resource: "v1" or "<group>/<version>"."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        """/api/v1 for the core group, /apis/<group>/<version> otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """REST path of the collection (no name) or of one object (and its subresource).

        For a namespaced resource `namespace=None` addresses the collection across all
        namespaces (list/watch only)."""
        parts = [self.group_version_path]
        if self.namespaced and namespace is not None:
            parts.append(f"namespaces/{_seg(namespace)}")
        elif not self.namespaced and namespace is not None:
            raise ValueError(f"{self.plural} are cluster-scoped; got namespace {namespace!r}")
        parts.append(self.plural)
        if name is not None:
            if self.namespaced and namespace is None:
                raise ValueError(f"{self.plural} are namespaced; a namespace is needed for {name!r}")
            parts.append(_seg(name))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}" if self.group else f"{self.plural}/{self.version}"


PODS = ResourceRef("", "v1", "pods", "Pod", True)
SERVICES = ResourceRef("", "v1", "services", "Service", True)
EVENTS = ResourceRef("", "v1", "events", "Event", True)
SECRETS = ResourceRef("", "v1", "secrets", "Secret", True)
CONFIG_MAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
PERSISTENT_VOLUME_CLAIMS = ResourceRef("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
# The kinds a job's extra children (Framework.extra_children, ChildMaker's) may be, by kind.
# ConfigMaps are watched (labelled with a job name only); Secrets and PersistentVolumeClaims
# (a TrainJob's volumeClaimPolicies) are only ever created.
EXTRA_CHILD_RESOURCES = {
    "ConfigMap": CONFIG_MAPS,
    "Secret": SECRETS,
    "PersistentVolumeClaim": PERSISTENT_VOLUME_CLAIMS,
}
INGRESSES = ResourceRef("networking.k8s.io", "v1", "ingresses", "Ingress", True)
NAMESPACES = ResourceRef("", "v1", "namespaces", "Namespace", False)
NODES = ResourceRef("", "v1", "nodes", "Node", False)
RESOURCE_QUOTAS = ResourceRef("", "v1", "resourcequotas", "ResourceQuota", True)
PRIORITY_CLASSES = ResourceRef("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)
LEASES = ResourceRef("coordination.k8s.io", "v1", "leases", "Lease", True)
HORIZONTAL_POD_AUTOSCALERS = ResourceRef(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True
)
MUTATING_WEBHOOK_CONFIGURATIONS = ResourceRef(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
)
VALIDATING_WEBHOOK_CONFIGURATIONS = ResourceRef(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)
CUSTOM_RESOURCE_DEFINITIONS = ResourceRef(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
# Create-only review resources (the secure /metrics endpoint authenticates and authorizes with them)
TOKEN_REVIEWS = ResourceRef("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
SELF_SUBJECT_REVIEWS = ResourceRef(
    "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False
)
SUBJECT_ACCESS_REVIEWS = ResourceRef(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)
TRAINING_POLICIES = ResourceRef(API_GROUP, API_VERSION, "trainingpolicies", "TrainingPolicy", False)
# Kubeflow Trainer v2 (kubetrain.api.trainer)
TRAINJOBS = ResourceRef("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", True)
TRAINING_RUNTIMES = ResourceRef(
    "trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime", True
)
CLUSTER_TRAINING_RUNTIMES = ResourceRef(
    "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", "ClusterTrainingRuntime", False
)

JOB_RESOURCES: dict[str, ResourceRef] = {
    kind: ResourceRef(API_GROUP, API_VERSION, fw.plural, kind, True) for kind, fw in FRAMEWORKS.items()
}


def job_resource_id(kind: str, group: str) -> str:
    """How the controller names a job resource in its queue keys: the kind for kubetrain.io
    ("TFJob"), `<kind>.<group>` for another group ("TFJob.kubeflow.org")."""
    return kind if group == API_GROUP else f"{kind}.{group}"


def job_resources_in(groups: Iterable[str]) -> dict[str, ResourceRef]:
    """Every job resource of the given API groups (kubetrain.api.groups), by `job_resource_id`."""
    return {
        job_resource_id(kind, group): ResourceRef(group, job_version(kind, group), fw.plural, kind, True)
        for group in job_groups(groups)
        for kind, fw in FRAMEWORKS.items()
        if group_serves(group, kind)
    }


# gang scheduler name (the --gang-scheduler flag) -> the PodGroup resource it uses
POD_GROUP_RESOURCES: dict[str, ResourceRef] = {
    name: ResourceRef(g.group, g.version, g.plural, g.kind, True) for name, g in GANG_SCHEDULERS.items()
}
VOLCANO_PODGROUPS = POD_GROUP_RESOURCES[VOLCANO.name]
SCHEDULER_PLUGINS_PODGROUPS = POD_GROUP_RESOURCES[SCHEDULER_PLUGINS.name]


def job_resource(kind: str) -> ResourceRef:
    """The ResourceRef of a job kind ("TFJob", …); KeyError names the valid kinds."""
    try:
        return JOB_RESOURCES[kind]
    except KeyError:
        raise KeyError(
            f"unknown job kind {QUOTE.encode(kind)}; known kinds: {', '.join(sorted(JOB_RESOURCES))}"
        ) from None

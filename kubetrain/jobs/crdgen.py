"""CustomResourceDefinitions (apiextensions.k8s.io/v1) generated from the pydantic job models.

The pydantic JSON Schema is turned into a *structural* schema as kube-apiserver requires:
every `$ref` inlined; `Optional[X]` (pydantic's `anyOf: [X, {type: null}]`) becomes plain `X`;
resource quantities become `x-kubernetes-int-or-string` (the one `anyOf` shape structural schemas
allow); free-form objects (pod templates, HPA metrics, label-selector expressions) become
`type: object` + `x-kubernetes-preserve-unknown-fields`; `metadata` is a bare `type: object`
(the API server validates it itself); titles, `default: null` and `additionalProperties: false`
(not allowed next to `properties`) are dropped. Each property keeps the description its model
field gives (`Field(description=...)`), which `kubectl explain` prints; a model class's docstring
(written for kubetrain's developers) is not carried.
Pod templates are not expanded (that would make each CRD several hundred KiB, too big for a
client-side `kubectl apply`): the validating webhook checks them against the PodTemplateSpec schema.
They carry only the skeleton of PodSpec's keyed lists (kubetrain.jobs.podlistkeys), so the API
server refuses duplicate keys there and server-side apply merges those lists as with Kubeflow's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kubetrain.api import policy
from kubetrain.api.groups import KUBEDL_GROUP
from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.registry import FRAMEWORKS, converted_versions, group_serves, job_version
from kubetrain.jobs import listkeys, podlistkeys
from kubetrain.jobs.kubedlcrd import kubedl_schema
from kubetrain.jobs.parse import API_GROUP

CATEGORY = "kubetrain"
_LABELS = {"app.kubernetes.io/name": "kubetrain", "app.kubernetes.io/part-of": "kubetrain"}
_DROP_KEYS = ("title", "default")

# runPolicy fields of kubetrain.io only: the other groups' schemas stay theirs (annotations there).
KUBETRAIN_RUN_POLICY = ("progressDeadlineSeconds", "startDeadlineSeconds")


def job_crds(group: str = API_GROUP) -> list[dict[str, Any]]:
    """One CRD per job kind the group has, in registry order."""
    return [job_crd(fw, group) for kind, fw in FRAMEWORKS.items() if group_serves(group, kind)]


def all_crds(group: str = API_GROUP) -> list[dict[str, Any]]:
    """Every CRD kubetrain installs: the job kinds, then TrainingPolicy. With another `group`
    (kubeflow.org, kubetrain.api.groups) its job kinds only: TrainingPolicy stays kubetrain.io's."""
    if group != API_GROUP:
        return job_crds(group)
    return [*job_crds(), training_policy_crd()]


def training_policy_crd() -> dict[str, Any]:
    """The cluster-scoped TrainingPolicy (docs/behaviour.md §9); not in the `kubetrain` category so
    `kubectl get kubetrain` lists jobs only."""
    schema = model_schema(policy.TrainingPolicy)
    schema["description"] = "TrainingPolicy: platform defaults and limits for training jobs (kubetrain.io)."
    version: dict[str, Any] = {
        "name": policy.VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            {"name": "Enforcement", "type": "string", "jsonPath": ".spec.enforcement"},
            {"name": "Valid", "type": "boolean", "jsonPath": ".status.valid"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{policy.PLURAL}.{policy.GROUP}", "labels": dict(_LABELS)},
        "spec": {
            "group": policy.GROUP,
            "scope": "Cluster",
            "names": {
                "kind": policy.KIND,
                "listKind": f"{policy.KIND}List",
                "plural": policy.PLURAL,
                "singular": policy.SINGULAR,
                "shortNames": list(policy.SHORT_NAMES),
            },
            "versions": [version],
        },
    }


def crd_file_name(crd: dict[str, Any]) -> str:
    """`kubetrain.io_tfjobs.yaml` (the controller-gen naming convention)."""
    return f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"


def job_crd(framework: Framework, group: str = API_GROUP) -> dict[str, Any]:
    """The CRD of one job kind in `group`. Every CRD kubetrain generates carries the label
    `app.kubernetes.io/part-of: kubetrain`: the operator refuses to serve a kubeflow.org kind
    whose CRD lacks it (Kubeflow's operator installed it). Another group's CRDs have no short
    names, so `tfj` stays unambiguous when both groups are served."""
    schema = job_schema(framework)
    describe_pod_templates(schema, framework, group)
    if group == KUBEDL_GROUP:
        kubedl_schema(schema, framework)
    else:  # kubetrain.io's job kinds have kubeflow.org's schema (training-operator's markers)
        listkeys.apply(schema, listkeys.KUBEFLOW_JOB)
    version: dict[str, Any] = {
        "name": job_version(framework.kind, group),
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": _subresources(framework),
        "additionalPrinterColumns": _printer_columns(),
    }
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{framework.plural}.{group}",
            "labels": dict(_LABELS),
        },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": framework.kind,
                "listKind": f"{framework.kind}List",
                "plural": framework.plural,
                "singular": framework.singular,
                "shortNames": list(framework.short_names),
                "categories": [CATEGORY],
            },
            "versions": [version],
        },
    }
    if group != API_GROUP:
        del crd["spec"]["names"]["shortNames"]
        # Kubeflow's schema has no progress or start deadline: jobs there use the annotations.
        run_policy = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["runPolicy"]
        for name in KUBETRAIN_RUN_POLICY:
            run_policy["properties"].pop(name, None)
    extra = converted_versions(framework.kind, group)
    if extra:
        crd["spec"]["versions"] += [
            {
                **version,
                "name": name,
                "storage": False,
                "schema": {"openAPIV3Schema": _converted_schema(framework, name)},
            }
            for name in extra
        ]
        crd["spec"]["conversion"] = {
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": conversion_client_config()},
        }
    return crd


# The conversion webhook's default address: the chart's webhook Service for a release named
# `kubetrain` in `kubetrain-system`; `kubetrain crds --conversion-service`, the chart and
# `kubetrain dev` set their own (`with_conversion_client`).
CONVERSION_SERVICE = ("kubetrain-system", "kubetrain-webhook")
CONVERSION_PATH = "/convert"


def conversion_client_config(namespace: str = "", name: str = "") -> dict[str, Any]:
    """A CRD conversion webhook clientConfig reaching kubetrain's webhook Service at /convert."""
    return {
        "service": {
            "namespace": namespace or CONVERSION_SERVICE[0],
            "name": name or CONVERSION_SERVICE[1],
            "path": CONVERSION_PATH,
            "port": 443,
        }
    }


def with_conversion_client(crds: list[dict[str, Any]], client_config: dict[str, Any]) -> list[dict[str, Any]]:
    """The CRDs with every conversion webhook's clientConfig replaced (a url, a caBundle, …)."""
    out = []
    for crd in crds:
        webhook = (crd["spec"].get("conversion") or {}).get("webhook")
        if webhook is not None:
            conversion = {
                **crd["spec"]["conversion"],
                "webhook": {**webhook, "clientConfig": dict(client_config)},
            }
            crd = {**crd, "spec": {**crd["spec"], "conversion": conversion}}
        out.append(crd)
    return out


def _converted_schema(framework: Framework, version: str) -> dict[str, Any]:
    """The schema of a version served through conversion (MPIJob kubeflow.org/v1)."""
    model = framework.converted_model(version)
    assert model is not None, f"{framework.kind} {version} has no model"
    schema = model_schema(model)
    describe_pod_templates(schema, framework, API_GROUP)
    # Served in kubeflow.org only, whose schemas have no progress deadline (see above).
    for name in KUBETRAIN_RUN_POLICY:
        schema["properties"]["spec"]["properties"]["runPolicy"]["properties"].pop(name, None)
    schema["description"] = (
        f"{framework.kind} {version}, converted to and from {framework.kubeflow_version} (the storage "
        "version) by kubetrain's conversion webhook."
    )
    return schema


def describe_pod_templates(schema: dict[str, Any], framework: Framework, group: str) -> None:
    """The PodSpec list keys in the open pod template of a job schema's replica specs: core/v1's,
    as training-operator's and mpi-operator's CRDs carry them; in KubeDL's group, KubeDL's."""
    pod_spec = podlistkeys.KUBEDL_POD_SPEC if group == KUBEDL_GROUP else podlistkeys.POD_SPEC
    template = listkeys.node(schema, f"spec.{framework.replica_field}{{}}.template")
    podlistkeys.describe_pod_template(template, pod_spec)


def job_schema(framework: Framework) -> dict[str, Any]:
    """The structural openAPIV3Schema of one job kind."""
    schema = model_schema(framework.job_model)
    schema["description"] = f"{framework.kind} is a {framework.display_name} training job (kubetrain.io)."
    return schema


# The descriptions of the TypeMeta fields every object has.
API_VERSION_DESCRIPTION = (
    "The group and version of this object's schema, e.g. kubetrain.io/v1; the API server converts "
    "the versions it serves to the one it stores."
)
KIND_DESCRIPTION = "The object's type, in CamelCase, e.g. PyTorchJob; fixed for the resource."


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural schema of a top-level API object model."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = raw.get("$defs", {})
    schema = _structural(raw, defs)
    props = schema["properties"]
    props["apiVersion"] = {"type": "string", "description": API_VERSION_DESCRIPTION}
    props["kind"] = {"type": "string", "description": KIND_DESCRIPTION}
    # No description: kube-apiserver refuses anything but `type` on the root metadata
    # (apiextensions-apiserver `validateStructuralMetadataInvariants`).
    props["metadata"] = {"type": "object"}
    # The API server accepts objects without spec/status; the webhook reports what is missing.
    schema.pop("required", None)
    return schema


def has_scale_subresource(framework: Framework) -> bool:
    """Whether the framework's CRD has the scale subresource (`kubectl scale`, HPAs)."""
    return "scale" in _subresources(framework)


def _subresources(framework: Framework) -> dict[str, Any]:
    subresources: dict[str, Any] = {"status": {}}
    rtype = framework.scalable_replica_type
    if rtype is not None:
        # `kubectl scale` / an HPA resize this replica type.
        subresources["scale"] = {
            "specReplicasPath": f".spec.{framework.replica_field}.{rtype}.replicas",
            "statusReplicasPath": f".status.replicaStatuses.{rtype}.active",
            "labelSelectorPath": f".status.replicaStatuses.{rtype}.selector",
        }
    return subresources


def _printer_columns() -> list[dict[str, Any]]:
    return [
        {
            "name": "State",
            "type": "string",
            "jsonPath": ".status.conditions[-1:].type",
            "description": "The type of the latest condition",
        },
        {
            "name": "Replicas",
            "type": "integer",
            "jsonPath": ".status.replicas",
            "description": "Desired pods, all replica types",
        },
        {
            "name": "Active",
            "type": "integer",
            "jsonPath": ".status.active",
            "description": "Running pods, all replica types",
        },
        {
            "name": "Progress",
            "type": "integer",
            "jsonPath": ".status.trainerStatus.progressPercentage",
            "description": "Percent done, as the training code last reported it",
        },
        {
            "name": "ETA",
            "type": "integer",
            "jsonPath": ".status.trainerStatus.estimatedRemainingSeconds",
            "description": "Seconds left, as the training code last estimated them",
        },
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


# ---------------------------------------------------------------------------------------------
# JSON Schema (pydantic) → structural schema


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        extra = {k: v for k, v in node.items() if k != "$ref"}
        # The field's description (in `extra`) is the property's; the class docstring is not.
        target = {k: v for k, v in defs[name].items() if k != "description"}
        node = {**target, **extra}
    return node


def _is_quantity(branches: list[dict[str, Any]]) -> bool:
    types = {b.get("type") for b in branches}
    return (
        "string" in types and bool(types & {"integer", "number"}) and types <= {"string", "integer", "number"}
    )


def _structural(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    node = _resolve(node, defs)
    branches = node.get("anyOf")
    if branches is not None:
        non_null = [_resolve(b, defs) for b in branches if b.get("type") != "null"]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if _is_quantity(non_null):
            return {
                **_clean(rest),
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            }
        if len(non_null) != 1:
            raise ValueError(f"cannot express a union in a structural schema: {node}")
        return _structural({**non_null[0], **rest}, defs)
    out = _clean(node)
    out.pop("$defs", None)
    kind = node.get("type")
    if kind == "object":
        props = node.get("properties")
        additional = node.get("additionalProperties")
        out.pop("additionalProperties", None)
        if props:
            out["properties"] = {name: _structural(sub, defs) for name, sub in props.items()}
            if "required" in node:
                out["required"] = list(node["required"])
        elif isinstance(additional, dict) and additional:
            out["additionalProperties"] = _structural(additional, defs)
        else:
            # A free-form object: a pod template, an HPA MetricSpec, a selector expression.
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif kind == "array":
        out["items"] = _structural(node.get("items", {}), defs)
    elif kind is None and "enum" not in node:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _clean(node: dict[str, Any]) -> dict[str, Any]:
    skip = (*_DROP_KEYS, "properties", "items", "anyOf", "$ref")
    return {k: v for k, v in node.items() if k not in skip}

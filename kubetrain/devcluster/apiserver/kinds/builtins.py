"""Defaulting and validation of built-in kinds, as far as clients of the operator rely on them.

Pods get the defaults kube-apiserver (and its default admission plugins) give them: phase Pending,
restartPolicy Always, terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst, schedulerName
default-scheduler, serviceAccountName default, container terminationMessagePath/Policy and
imagePullPolicy, port protocol TCP. Services get type ClusterIP and the v1 defaults (their
cluster IPs and node ports: `servicealloc.py`). Namespaces get phase Active and the
`kubernetes` finalizer. autoscaling/v2 HorizontalPodAutoscalers get minReplicas 1 and, without
metrics, the 80 % CPU utilization target, and are checked for scaleTargetRef and
1 ≤ minReplicas ≤ maxReplicas.
PersistentVolumeClaims: `pvcs.py`. What pod specs (containers, ports, env, volumes, mounts,
resources, probes, security contexts, affinity) and Services are checked for: `podvalidation.py`
(and the modules it names), `servicevalidation.py`.
"""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.apiserver.base.errors import Cause
from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.kinds import (
    configdata,
    coordination,
    envvalidation,
    eventrules,
    gatedpods,
    labelkeys,
    pdbs,
    podvalidation,
    portvalidation,
    priorityclasses,
    probevalidation,
    pvcs,
    servicevalidation,
    tolerationvalidation,
)
from kubetrain.devcluster.apiserver.kinds.crds import validation as crdvalidation
from kubetrain.devcluster.apiserver.kinds.objectmeta import dns1123_label_errors


def _image_pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    if ":" not in tail or tail.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def _default_container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if isinstance(c.get("image"), str):
        c.setdefault("imagePullPolicy", _image_pull_policy(c["image"]))
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def default_pod(pod: Obj) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                _default_container(c)
                podvalidation.default_requests_from_limits(c)
                envvalidation.default_field_refs(c)
                probevalidation.default_probes(c)
    portvalidation.default_host_network_ports(spec)
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", "BestEffort")


def _pod_dns_name_causes(spec: Obj) -> list[Cause]:
    """`spec.hostname` and `spec.subdomain`, when set, are DNS-1123 labels (core validation
    `ValidatePodSpec` → `ValidateDNS1123Label`: one Invalid cause per message)."""
    causes = []
    for field in ("hostname", "subdomain"):
        value = spec.get(field)
        if isinstance(value, str) and value:
            causes += [
                Cause("FieldValueInvalid", f'Invalid value: "{value}": {msg}', f"spec.{field}")
                for msg in dns1123_label_errors(value)
            ]
    return causes


def validate_pod(pod: Obj, old: Obj | None) -> list[Cause]:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return [Cause("FieldValueRequired", "Required value", "spec")]
    causes = podvalidation.pod_spec_causes(spec, creating=old is None)
    policy = spec.get("restartPolicy")
    if policy not in ("Always", "OnFailure", "Never"):
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Always", "OnFailure", "Never"',
                "spec.restartPolicy",
            )
        )
    causes += _pod_dns_name_causes(spec)
    if old is not None and not causes:
        causes.extend(_pod_update_causes(pod, old))
    return causes


_MUTABLE_POD_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


def _pod_update_causes(pod: Obj, old: Obj) -> list[Cause]:
    new_spec, old_spec = dict(pod["spec"]), dict(old.get("spec") or {})
    # schedulingGates: a gate may be removed (the pod then becomes schedulable), never added
    old_gates = [g.get("name") for g in old_spec.pop("schedulingGates", None) or [] if isinstance(g, dict)]
    for gate in new_spec.pop("schedulingGates", None) or []:
        name = gate.get("name") if isinstance(gate, dict) else gate
        if name not in old_gates:
            message = f"Forbidden: only deletion is allowed, but found new scheduling gate '{name}'"
            return [Cause("FieldValueForbidden", message, "spec.schedulingGates")]
    # a gated pod's nodeSelector and nodeAffinity may be narrowed (gatedpods.py)
    causes = gatedpods.gated_update_causes(new_spec, old_spec) if old_gates else []
    causes += tolerationvalidation.update_causes(new_spec.get("tolerations"), old_spec.get("tolerations"))
    for field in _MUTABLE_POD_SPEC:
        new_spec.pop(field, None)
        old_spec.pop(field, None)
    if old_spec.get("nodeName") and not new_spec.get("nodeName"):
        new_spec["nodeName"] = old_spec["nodeName"]
    strip = [{k: v for k, v in c.items() if k != "image"} for c in new_spec.get("containers") or []]
    old_strip = [{k: v for k, v in c.items() if k != "image"} for c in old_spec.get("containers") or []]
    new_spec["containers"], old_spec["containers"] = strip, old_strip
    if new_spec != old_spec:
        return [
            *causes,
            Cause(
                "FieldValueForbidden",
                "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
                "set to 1 if it was previously negative)",
                "spec",
            ),
        ]
    return causes


def default_service(svc: Obj) -> None:
    """v1 `SetDefaults_Service`. Cluster IPs, IP families and node ports are the registry's, after
    mutating admission (servicealloc.py)."""
    spec = svc.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    kind = spec["type"]
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port and port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port["port"]
    svc.setdefault("status", {"loadBalancer": {}})


def default_namespace(ns: Obj) -> None:
    ns.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    ns.setdefault("status", {}).setdefault("phase", "Active")
    labels = ns["metadata"].setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = ns["metadata"]["name"]


def default_hpa(hpa: Obj) -> None:
    spec = hpa.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        ]


def validate_hpa(hpa: Obj) -> list[Cause]:
    spec = hpa.get("spec")
    if not isinstance(spec, dict):
        return [Cause("FieldValueRequired", "Required value", "spec")]
    causes: list[Cause] = []
    ref = spec.get("scaleTargetRef")
    for field in ("kind", "name"):
        if not isinstance(ref, dict) or not ref.get(field):
            causes.append(Cause("FieldValueRequired", "Required value", f"spec.scaleTargetRef.{field}"))
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if not isinstance(high, int) or high < 1:
        causes.append(
            Cause("FieldValueInvalid", f"Invalid value: {high}: must be greater than 0", "spec.maxReplicas")
        )
    if not isinstance(low, int) or low < 1:
        causes.append(
            Cause("FieldValueInvalid", f"Invalid value: {low}: must be greater than 0", "spec.minReplicas")
        )
    elif isinstance(high, int) and low > high:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {high}: must be greater than or equal to `minReplicas`",
                "spec.maxReplicas",
            )
        )
    return causes


def prepare_builtin_create(resource: str, obj: Obj) -> None:
    """The strategies' `PrepareForCreate` that run after mutating admission, once: a Pod's
    `matchLabelKeys`/`mismatchLabelKeys` merged into its selectors (labelkeys.py)."""
    if resource == "pods":
        labelkeys.apply_label_keys(obj)


def default_builtin(resource: str, obj: Obj, old: Obj | None) -> None:
    if resource == "pods" and old is None:
        default_pod(obj)
    elif resource == "services":
        default_service(obj)
    elif resource == "namespaces":
        default_namespace(obj)
    elif resource == "customresourcedefinitions":
        default_crd(obj, old)
    elif resource == "horizontalpodautoscalers":
        default_hpa(obj)
    elif resource == "persistentvolumeclaims":
        pvcs.default_pvc(obj, old)
    elif resource == "secrets":
        configdata.fold_string_data(obj)
    elif resource == "priorityclasses":
        priorityclasses.default_priority_class(obj, old)
    elif resource == "poddisruptionbudgets":
        pdbs.default_pdb(obj, old)


def default_crd(crd: Obj, old: Obj | None = None) -> None:
    """apiextensions/v1 `SetDefaults_CustomResourceDefinitionSpec` and the strategy's
    PrepareForCreate/PrepareForUpdate (status.storedVersions gains the storage version), then,
    served at once, the Established and NamesAccepted conditions the apiextensions controllers set.
    v1 has no default scope: a CRD without one is refused (`crds/validation.py`)."""
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec["names"] = names
    spec.setdefault("conversion", {"strategy": "None"})
    webhook = spec["conversion"].get("webhook") if isinstance(spec["conversion"], dict) else None
    service = (
        ((webhook or {}).get("clientConfig") or {}).get("service") if isinstance(webhook, dict) else None
    )
    if isinstance(service, dict):
        service.setdefault("port", 443)
    stored = [v.get("name") for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")][
        :1
    ]
    if old is None:
        crd["status"] = {}
    status = crd.setdefault("status", {})
    status["acceptedNames"] = names
    previous = status.get("storedVersions") or []
    status["storedVersions"] = previous + [v for v in stored if v not in previous]
    when = crd["metadata"].get("creationTimestamp")
    status["conditions"] = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "reason": "NoConflicts",
            "message": "no conflicts found",
            "lastTransitionTime": when,
        },
        {
            "type": "Established",
            "status": "True",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
            "lastTransitionTime": when,
        },
    ]


_BINDINGS = ("rolebindings", "clusterrolebindings")
_ROLE_REF_FIELDS = (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))


def validate_builtin(resource: str, obj: Obj, old: Obj | None, via: str = "") -> list[Cause]:
    """`via`: the group version a request came through when it is another view of the stored
    resource (events.k8s.io/v1 for Events, `eventrules.event_causes`)."""
    if resource == "pods":
        return validate_pod(obj, old)
    if resource == "services":
        return servicevalidation.validate_service(obj, old)
    if resource == "customresourcedefinitions":
        return crdvalidation.crd_causes(obj, old)
    if resource == "horizontalpodautoscalers":
        return validate_hpa(obj)
    if resource == "leases":
        return coordination.lease_causes(obj)
    if resource == "priorityclasses":
        return priorityclasses.priority_class_causes(obj, old)
    if resource == "poddisruptionbudgets":
        return pdbs.pdb_causes(obj)
    if resource == "secrets":
        return configdata.secret_causes(obj, old)
    if resource == "configmaps":
        return configdata.configmap_causes(obj, old)
    if resource == "events" and obj.get("apiVersion") == "v1":
        return eventrules.event_causes(obj, old, via)
    if resource == "persistentvolumeclaims":
        return pvcs.validate_pvc(obj, old)
    if resource in _BINDINGS and old is not None and obj.get("roleRef") != old.get("roleRef"):
        ref = obj.get("roleRef") or {}
        shown = ", ".join(f'{k}:"{ref.get(f, "")}"' for k, f in _ROLE_REF_FIELDS)
        return [
            Cause(
                "FieldValueInvalid",
                f"Invalid value: rbac.RoleRef{{{shown}}}: cannot change roleRef",
                "roleRef",
            )
        ]
    return []

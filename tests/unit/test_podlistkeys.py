"""The list keys inside kubetrain's open pod templates against Kubernetes' own types: every
keyed list and set of core/v1 PodSpec in the official OpenAPI schema of Kubernetes 1.36 (the one
devcluster decodes built-in kinds with) is in each job and runtime CRD's pod template, with the
same keys, each key a required (or the upstream-defaulted) scalar; and no other list is keyed."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.groups import KUBEDL_GROUP
from kubetrain.devcluster.apiserver.kinds import builtinschema
from kubetrain.jobs import listkeys
from kubetrain.jobs.crdgen import all_crds
from kubetrain.jobs.trainercrds import trainer_crds

Obj = dict[str, Any]
DEFAULTED = {("ports", "protocol"): "TCP", ("imagePullSecrets", "name"): ""}


def deref(node: Any) -> Any:
    defs = builtinschema._definitions()
    while isinstance(node, dict) and ("$ref" in node or len(node.get("allOf", [])) == 1):
        node = defs[node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node["allOf"][0]
    return node


def upstream_lists(node: Any, path: str = "", depth: int = 0) -> dict[str, tuple[str, ...]]:
    """core/v1's keyed lists (path → keys) and sets (path → ()), below `node`; embedded object
    metadata (an ephemeral volume's claim template) is left out, as controller-gen leaves it open."""
    node = deref(node)
    out: dict[str, tuple[str, ...]] = {}
    if not isinstance(node, dict) or depth > 12 or path.endswith("metadata"):
        return out
    if node.get("x-kubernetes-list-type") in ("map", "set"):
        out[path] = tuple(node.get("x-kubernetes-list-map-keys") or ())
    for name, sub in (node.get("properties") or {}).items():
        out |= upstream_lists(sub, f"{path}.{name}".lstrip("."), depth + 1)
    if isinstance(node.get("items"), dict):
        out |= upstream_lists(node["items"], f"{path}[]", depth + 1)
    return out


def crd_lists(node: Obj, path: str = "") -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    if node.get("x-kubernetes-list-type") in ("map", "set"):
        out[path] = tuple(node.get("x-kubernetes-list-map-keys") or ())
        if out[path]:
            items = node["items"]
            for key in out[path]:
                prop = items["properties"][key]
                assert prop["type"] in ("string", "integer"), (path, key)
                want = DEFAULTED.get((path.rsplit(".", 1)[-1], key))
                assert prop.get("default") == want, (path, key)
                assert (key in items.get("required", [])) == (want is None), (path, key)
    for name, sub in (node.get("properties") or {}).items():
        out |= crd_lists(sub, f"{path}.{name}".lstrip("."))
    if isinstance(node.get("items"), dict):
        out |= crd_lists(node["items"], f"{path}[]")
    return out


POD_SPEC = upstream_lists(builtinschema._definitions()["io.k8s.api.core.v1.PodSpec"])


def test_upstream_has_the_lists_kubeflows_crds_key() -> None:
    # what training-operator's, mpi-operator's and Trainer's CRDs key, as a sanity check of the walk
    assert POD_SPEC["containers"] == ("name",)
    assert POD_SPEC["containers[].ports"] == ("containerPort", "protocol")
    assert POD_SPEC["topologySpreadConstraints"] == ("topologyKey", "whenUnsatisfiable")


@pytest.mark.parametrize("group", ["kubetrain.io", "kubeflow.org"])
def test_every_job_kinds_template_keys_core_v1s_lists(group: str) -> None:
    for crd in all_crds(group):
        replica_field = next(
            (
                k
                for k in crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                    "properties"
                ]
                if k.endswith("ReplicaSpecs")
            ),
            None,
        )
        if replica_field is None:
            continue  # TrainingPolicy
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            template = listkeys.node(schema, f"spec.{replica_field}{{}}.template.spec")
            assert crd_lists(template) == POD_SPEC, (crd["metadata"]["name"], version["name"])


def test_kubedls_templates_key_what_kubedls_crds_key() -> None:
    for crd in all_crds(KUBEDL_GROUP):
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        (field,) = [k for k in schema["properties"]["spec"]["properties"] if k.endswith("ReplicaSpecs")]
        template = listkeys.node(schema, f"spec.{field}{{}}.template.spec")
        assert crd_lists(template) == {
            "containers[].ports": ("containerPort", "protocol"),
            "initContainers[].ports": ("containerPort", "protocol"),
            "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
        }


def test_the_runtimes_job_templates_key_core_v1s_and_batch_v1s_lists() -> None:
    job_spec = upstream_lists(builtinschema._definitions()["io.k8s.api.batch.v1.JobSpec"])
    assert job_spec["podFailurePolicy.rules[].onExitCodes.values"] == ()
    for crd in trainer_crds()[1:]:
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        template = listkeys.node(schema, "spec.template.spec.replicatedJobs[].template.spec")
        assert crd_lists(template) == job_spec


def test_a_trainjobs_resources_key_claims_and_env_references_are_atomic() -> None:
    schema = trainer_crds()[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert crd_lists(listkeys.node(schema, "spec.trainer.resourcesPerNode")) == {"claims": ("name",)}
    for env in ("spec.trainer.env[]", f"{listkeys.PATCH_POD}.containers[].env[]"):
        ref = listkeys.node(schema, f"{env}.valueFrom.secretKeyRef")
        assert ref["x-kubernetes-map-type"] == "atomic" and ref["x-kubernetes-preserve-unknown-fields"]

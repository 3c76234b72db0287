"""CEL validation rules calling the Kubernetes CEL libraries (k8s.io/apiserver pkg/cel/library:
lists, regex, URLs, quantities, IPs, CIDRs, semver, format) on custom resources: evaluated, not skipped,
with the library's runtime errors in the cause.

Runs like test_conformance.py: against devcluster in the normal test run, against $KUBECONFIG's
cluster with `pytest -m e2e`.
"""

from __future__ import annotations

from typing import Any

from crd_builders import crd
from e2e.conformance_support import MERGE, Obj, assert_status, install_crd

GROUP = "cellibs.conformance.kubetrain.io"
PLURAL = "probes"
RULES = [
    ("!has(self.sizes) || self.sizes.isSorted()", "sizes must be sorted"),
    ("!has(self.sizes) || self.sizes.sum() <= 10", "sizes must sum to at most 10"),
    (
        "!has(self.endpoint) || (isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https')",
        "https only",
    ),
    ("!has(self.memory) || quantity(self.memory).isLessThan(quantity('1Gi'))", "memory must be under 1Gi"),
    ("!has(self.name) || self.name.find('^[a-z]+') == self.name", "name must be lowercase"),
    ("!has(self.network) || cidr(self.network).containsIP(ip('10.0.0.1'))", "network must hold 10.0.0.1"),
    (
        "!has(self.version) || semver(self.version, true).isGreaterThan(semver('1.0.0'))",
        "version must be over 1",
    ),
]
# optionalOldSelf: run on create too, `oldSelf` then optional.none()
OPTIONAL_OLD_SELF = [
    {
        "rule": "oldSelf.hasValue() || !has(self.name) || self.name != 'taken'",
        "message": "the name 'taken' is refused on create",
        "optionalOldSelf": True,
    },
    {
        "rule": "!has(self.sizes) || self.sizes.size() >= oldSelf.orValue(self).sizes.size()",
        "message": "sizes may not shrink",
        "optionalOldSelf": True,
    },
]
CRD = crd(
    {
        "type": "object",
        "x-kubernetes-validations": [*({"rule": r, "message": m} for r, m in RULES), *OPTIONAL_OLD_SELF],
        "properties": {
            "sizes": {"type": "array", "maxItems": 8, "items": {"type": "integer"}},
            "endpoint": {"type": "string", "maxLength": 128},
            "memory": {"type": "string", "maxLength": 32},
            "name": {"type": "string", "maxLength": 32},
            "network": {"type": "string", "maxLength": 64},
            "version": {"type": "string", "maxLength": 32},
        },
    },
    group=GROUP,
    plural=PLURAL,
    kind="Probe",
)


def probes(ns: str) -> str:
    return f"/apis/{GROUP}/v1/namespaces/{ns}/{PLURAL}"


def probe(obj_name: str, **spec: Any) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Probe", "metadata": {"name": obj_name}, "spec": spec}


async def test_rules_calling_the_kubernetes_libraries_are_evaluated(kube: Any, namespace: str) -> None:
    await install_crd(kube, CRD)
    fine = probe(
        "fine",
        sizes=[1, 2, 3],
        endpoint="https://example.com/x",
        memory="512Mi",
        name="abc",
        network="10.0.0.0/8",
        version="v1.2",
    )
    made = await kube.request("POST", probes(namespace), fine)
    assert made.status == 201, made
    bad = probe(
        "bad",
        sizes=[5, 4, 3],
        endpoint="http://example.com",
        memory="2Gi",
        name="abC",
        network="192.168.0.0/16",
        version="1.0.0-rc.1",
    )
    refused = await kube.request("POST", probes(namespace), bad)
    assert_status(refused.body, 422, "Invalid")
    causes = refused.body["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec"] * len(RULES)
    assert [c["message"] for c in causes] == [f"Invalid value: {m}" for _, m in RULES]


async def test_a_library_s_runtime_error_is_the_cause(kube: Any, namespace: str) -> None:
    await install_crd(kube, CRD)
    refused = await kube.request("POST", probes(namespace), probe("q", memory="10Mo"))
    assert_status(refused.body, 422, "Invalid")
    [cause] = refused.body["details"]["causes"]
    assert cause["field"] == "spec"
    assert cause["message"] == (
        'Invalid value: "object": quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: memory must be under 1Gi"
    )


async def test_an_optional_old_self_rule_runs_on_create_and_update(kube: Any, namespace: str) -> None:
    """validation.go: a rule with `optionalOldSelf` also runs where there is no old value."""
    await install_crd(kube, CRD)
    taken = await kube.request("POST", probes(namespace), probe("t", name="taken"))
    assert_status(taken.body, 422, "Invalid")
    assert [c["message"] for c in taken.body["details"]["causes"]] == [
        "Invalid value: the name 'taken' is refused on create"
    ]
    await kube.ok("POST", probes(namespace), probe("s", sizes=[1, 2, 3]))
    shrunk = await kube.request(
        "PATCH", f"{probes(namespace)}/s", {"spec": {"sizes": [1]}}, content_type=MERGE
    )
    assert_status(shrunk.body, 422, "Invalid")
    assert [c["message"] for c in shrunk.body["details"]["causes"]] == ["Invalid value: sizes may not shrink"]
    grown = await kube.request(
        "PATCH", f"{probes(namespace)}/s", {"spec": {"sizes": [1, 2, 3, 4]}}, content_type=MERGE
    )
    assert grown.status == 200, grown

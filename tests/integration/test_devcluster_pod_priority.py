"""devcluster's Priority admission on a pod create and update, as kube-apiserver's Priority plugin
(plugin/pkg/admission/priority admission.go `admitPod`): the named PriorityClass gives the pod's
priority and preemptionPolicy, an unknown class is 403, without a class the globalDefault one is
named (0 and PreemptLowerPriority without one), and a pod giving another value is 403."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.client import RawApi

PODS = "/api/v1/namespaces/default/pods"
PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def pc(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


async def test_a_priority_without_its_class_is_forbidden(raw: RawApi) -> None:
    code, body = await raw.request("POST", PODS, body=pod("p100", priority=100))
    assert code == 403, body
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods "p100" is forbidden: the integer value of priority (100) must not be provided in pod '
        "spec; priority admission controller computed 0 from the given PriorityClass name"
    )
    code, body = await raw.request("POST", PODS, body=pod("p0", priority=0))
    assert code == 201, body
    code, body = await raw.request("POST", PODS, body=pod("none"))
    assert code == 201, body
    assert body["spec"]["priority"] == 0 and body["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert "priorityClassName" not in body["spec"]


async def test_the_system_classes_give_their_values(raw: RawApi) -> None:
    code, body = await raw.request("POST", PODS, body=pod("crit", priorityClassName="system-node-critical"))
    assert code == 201 and body["spec"]["priority"] == 2000001000, body
    code, body = await raw.request(
        "POST", PODS, body=pod("crit-0", priorityClassName="system-cluster-critical", priority=0)
    )
    assert code == 403, body
    assert "computed 2000000000 from the given PriorityClass name" in body["message"]


async def test_a_user_class_gives_its_value_and_policy(raw: RawApi) -> None:
    code, body = await raw.request("POST", PCS, body=pc("batch", 500, preemptionPolicy="Never"))
    assert code == 201, body
    code, body = await raw.request("POST", PODS, body=pod("b", priorityClassName="batch"))
    assert code == 201, body
    assert (body["spec"]["priority"], body["spec"]["preemptionPolicy"]) == (500, "Never")
    code, body = await raw.request(
        "POST", PODS, body=pod("b2", priorityClassName="batch", preemptionPolicy="PreemptLowerPriority")
    )
    assert code == 403, body
    assert body["message"] == (
        'pods "b2" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not '
        "be provided in pod spec; priority admission controller computed Never from the given "
        "PriorityClass name"
    )


async def test_an_unknown_class_is_forbidden(raw: RawApi) -> None:
    code, body = await raw.request("POST", PODS, body=pod("x", priorityClassName="nope"))
    assert code == 403, body
    assert body["message"] == 'pods "x" is forbidden: no PriorityClass with name nope was found'
    generated = pod("", priorityClassName="nope")
    generated["metadata"] = {"generateName": "x-"}
    code, body = await raw.request("POST", PODS, body=generated)
    assert code == 403, body
    assert body["message"] == "pods is forbidden: no PriorityClass with name nope was found"


async def test_the_global_default_is_named_on_pods_without_a_class(raw: RawApi) -> None:
    code, body = await raw.request("POST", PCS, body=pc("everyday", 7, globalDefault=True))
    assert code == 201, body
    code, body = await raw.request("POST", PODS, body=pod("d"))
    assert code == 201, body
    assert (body["spec"]["priorityClassName"], body["spec"]["priority"]) == ("everyday", 7)
    code, body = await raw.request("POST", PODS, body=pod("d0", priority=0))
    assert code == 403, body
    assert "computed 7 from the given PriorityClass name" in body["message"]


async def test_an_update_keeps_the_priority_it_leaves_out(raw: RawApi) -> None:
    code, _ = await raw.request("POST", PCS, body=pc("kept", 40))
    assert code == 201
    code, created = await raw.request("POST", PODS, body=pod("u", priorityClassName="kept"))
    assert code == 201, created
    created["spec"].pop("priority")
    created["spec"].pop("preemptionPolicy")
    created["metadata"]["labels"] = {"touched": "yes"}
    code, body = await raw.request("PUT", f"{PODS}/u", body=created)
    assert code == 200, body
    assert (body["spec"]["priority"], body["spec"]["preemptionPolicy"]) == (40, "PreemptLowerPriority")

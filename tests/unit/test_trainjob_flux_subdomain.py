"""The Flux broker configuration's host names resolve under the pods' subdomain: a runtime's
`spec.template.spec.network.subdomain` names the pods' `spec.subdomain` and their headless
Service (JobSet's `GetSubdomain`), so the brokers connect through it — Trainer 2.3's flux.go
writes `<tj>` always, which under such a runtime names no Service."""

from __future__ import annotations

import re

import pytest

from kubetrain.jobs.trainjob.children import JobSetChildren
from kubetrain.jobs.trainjob.resolve import resolve

from .test_trainjob_flux import Obj, runtime, trainjob


def with_subdomain(subdomain: str | None) -> Obj:
    rt = runtime()
    if subdomain is not None:
        rt["spec"]["template"]["spec"]["network"] = {"subdomain": subdomain}
    return rt


def expand(hostlist: str) -> list[str]:
    """Flux's hostlist `prefix-[a-b]` (or `prefix-[a]`) as host names."""
    m = re.fullmatch(r"(.*)\[(\d+)(?:-(\d+))?\]", hostlist)
    assert m is not None, hostlist
    first, last = int(m[2]), int(m[3] or m[2])
    return [f"{m[1]}{i}" for i in range(first, last + 1)]


@pytest.mark.parametrize(("subdomain", "service"), [(None, "test-job"), ("flux-cluster", "flux-cluster")])
def test_every_brokers_address_is_its_pods_name_under_the_headless_service(
    subdomain: str | None, service: str
) -> None:
    job = trainjob(numNodes=3)
    r, errors = resolve(job, with_subdomain(subdomain))
    assert errors == [] and r is not None
    children = JobSetChildren(r, job)
    svc = children.service()
    assert svc["metadata"]["name"] == service and svc["spec"]["clusterIP"] == "None"
    init = next(o for o in r.extra if o["kind"] == "ConfigMap")["data"]["init.sh"]
    [connect] = re.findall(r'default_connect = "tcp://(.*):%p"', init)
    assert connect == f"%h.{service}.default.svc.cluster.local"
    [hosts] = re.findall(r'\{ host="(.*)"\},', init)
    pods = [children.pod("node", i, attempt=0) for i in range(3)]
    # a broker reaches each host at `<host>.<rest>`: a pod's DNS name, <hostname>.<subdomain>
    # .<namespace>.svc.<domain>, under the Service named after its subdomain
    assert [connect.replace("%h", h) for h in expand(hosts)] == [
        f"{p['spec']['hostname']}.{p['spec']['subdomain']}.{p['metadata']['namespace']}.svc.cluster.local"
        for p in pods
    ]
    assert {p["spec"]["subdomain"] for p in pods} == {svc["metadata"]["name"]}

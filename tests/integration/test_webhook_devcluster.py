"""The webhook as a user meets it: jobs applied to devcluster go through /mutate and /validate.

The WebhookServer runs over TLS on loopback; the webhook configurations reference a Service
(`kubetrain-webhook.kubetrain-system.svc:443`) that devcluster maps to the server's port, and
carry our CA as caBundle — exactly what the chart installs.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jobs import job, replica
from kubernetes_asyncio import client

from kubetrain.certs.generate import CertificateBundle, generate_bundle, service_dns_names
from kubetrain.certs.kubeapi import KubeClientCertApi
from kubetrain.certs.selfmanaged import SelfManagedCertificates
from kubetrain.certs.tls import write_cert_dir
from kubetrain.devcluster import DevCluster
from kubetrain.frameworks.pytorch import master_in_rendezvous_warning
from kubetrain.jobs.crdgen import job_crds
from kubetrain.kube.client import KubeClient
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    job_resource,
)
from kubetrain.webhook.server import WebhookServer

PYTORCHJOBS = job_resource("PyTorchJob")
TFJOBS = job_resource("TFJob")

NS, SERVICE = "kubetrain-system", "kubetrain-webhook"
MUTATING, VALIDATING = "kubetrain-mutating", "kubetrain-validating"


def webhook_config(
    kind: str, name: str, path: str, ca: bytes | None, failure_policy: str = "Fail"
) -> dict[str, Any]:
    client_config: dict[str, Any] = {"service": {"namespace": NS, "name": SERVICE, "path": path, "port": 443}}
    if ca is not None:
        client_config["caBundle"] = base64.b64encode(ca).decode()
    hook = {
        "name": f"{path.strip('/')}.kubetrain.io",
        "clientConfig": client_config,
        "rules": [
            {
                "apiGroups": ["kubetrain.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["tfjobs", "pytorchjobs", "mxjobs"],
                "scope": "Namespaced",
            }
        ],
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 10,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [hook],
    }


async def install_crds(kube: KubeClient) -> None:
    for crd in job_crds():
        await kube.create(CUSTOM_RESOURCE_DEFINITIONS, crd)

    async def served() -> None:
        while True:
            try:
                await kube.list(TFJOBS, "default")
                await kube.list(PYTORCHJOBS, "default")
                return
            except ApiError:
                await asyncio.sleep(0.05)

    await asyncio.wait_for(served(), 10)


async def register(kube: KubeClient, ca: bytes | None, failure_policy: str = "Fail") -> None:
    await kube.create(
        MUTATING_WEBHOOK_CONFIGURATIONS,
        webhook_config("MutatingWebhookConfiguration", MUTATING, "/mutate", ca, failure_policy),
    )
    await kube.create(
        VALIDATING_WEBHOOK_CONFIGURATIONS,
        webhook_config("ValidatingWebhookConfiguration", VALIDATING, "/validate", ca, failure_policy),
    )


def tfjob(name: str = "mnist", env: list[dict[str, str]] | None = None) -> dict[str, Any]:
    # "worker" in lower case on purpose: the webhook canonicalises the replica type's spelling.
    return job(
        "TFJob",
        name,
        {"worker": 2},
        namespace="default",
        image="tensorflow/tensorflow:2.15.0",
        container_extra={"env": env} if env else None,
    )


async def create_warned(api: client.ApiClient, plural: str, body: dict[str, Any]) -> list[str]:
    """POST a job of kubetrain.io/v1 as `kubectl apply` does; it must be stored (201). Its
    `Warning` headers, in order."""
    resp = await api.call_api(
        f"/apis/kubetrain.io/v1/namespaces/default/{plural}",
        "POST",
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    async with resp:
        assert resp.status == 201, await resp.text()
        return list(resp.headers.getall("Warning", []))


@pytest.fixture
def bundle() -> CertificateBundle:
    return generate_bundle(service_dns_names(SERVICE, NS))


@pytest.fixture
async def kube(api: client.ApiClient) -> KubeClient:
    k = KubeClient(api, qps=0)
    await install_crds(k)
    await k.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return k


@pytest.fixture
async def webhook(
    tmp_path: Path, devcluster: DevCluster, bundle: CertificateBundle
) -> AsyncIterator[WebhookServer]:
    write_cert_dir(tmp_path / "certs", bundle.serving.cert_pem, bundle.serving.key_pem, bundle.ca.cert_pem)
    server = WebhookServer(
        cert_dir=str(tmp_path / "certs"), host="127.0.0.1", port=0, cert_poll_interval=3600
    )
    await server.start()
    devcluster.service_ports[(NS, SERVICE, 443)] = server.port
    yield server
    await server.stop()


async def test_invalid_job_rejected_naming_the_field(
    kube: KubeClient, webhook: WebhookServer, bundle: CertificateBundle
) -> None:
    await register(kube, bundle.ca.cert_pem)
    bad = job("PyTorchJob", "bad", {"Master": 2}, namespace="default", image="pytorch:2")
    with pytest.raises(ApiError) as info:
        await kube.create(PYTORCHJOBS, bad)
    assert info.value.status == 422
    assert 'admission webhook "validate.kubetrain.io" denied the request:' in info.value.message
    assert "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1" in info.value.message
    with pytest.raises(ApiError) as missing:
        await kube.get(PYTORCHJOBS, "default", "bad")
    assert missing.value.status == 404


async def test_a_duplicate_container_is_the_api_servers_answer_before_the_validating_webhook(
    kube: KubeClient, webhook: WebhookServer, bundle: CertificateBundle
) -> None:
    """The CRD keys a pod template's containers by name: the API server refuses a second one of a
    name while validating against the schema, after the mutating webhook and before the
    validating one, so the answer is the API server's alone."""
    await register(kube, bundle.ca.cert_pem)
    twice = [{"name": "pytorch", "image": "pytorch:2"}, {"name": "pytorch", "image": "pytorch:2"}]
    bad = job(
        "PyTorchJob", "twice", {"Worker": replica("PyTorchJob", 1, containers=twice)}, namespace="default"
    )
    with pytest.raises(ApiError) as info:
        await kube.create(PYTORCHJOBS, bad)
    assert info.value.status == 422
    assert info.value.message == (
        'PyTorchJob.kubetrain.io "twice" is invalid: spec.pytorchReplicaSpecs[Worker].template.spec.'
        'containers[1]: Duplicate value: {"name":"pytorch"}'
    )


async def test_valid_job_stored_with_defaults_and_illegal_update_rejected(
    kube: KubeClient, webhook: WebhookServer, bundle: CertificateBundle
) -> None:
    await register(kube, bundle.ca.cert_pem)
    await kube.create(TFJOBS, tfjob())
    stored = await kube.get(TFJOBS, "default", "mnist")
    worker = stored["spec"]["tfReplicaSpecs"]["Worker"]  # canonical spelling written into the object
    assert worker["restartPolicy"] == "Never"
    # the webhook's default port, and the API server's default of its protocol (the CRD's, as
    # Kubeflow's CRD has it)
    assert worker["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}
    ]
    assert stored["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"

    # a running job: the template is immutable, suspend is not
    stored["status"] = {"conditions": [{"type": "Running", "status": "True"}]}
    stored = await kube.replace_status(TFJOBS, stored)
    changed = json.loads(json.dumps(stored))
    changed["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = (
        "tensorflow:2.16"
    )
    with pytest.raises(ApiError) as info:
        await kube.replace(TFJOBS, changed)
    assert 'admission webhook "validate.kubetrain.io" denied the request:' in info.value.message
    assert "spec.tfReplicaSpecs[Worker].template" in info.value.message
    stored["spec"]["runPolicy"]["suspend"] = True
    updated = await kube.replace(TFJOBS, stored)
    assert updated["spec"]["runPolicy"]["suspend"] is True


async def test_warning_surfaced_to_the_client(
    api: client.ApiClient, kube: KubeClient, webhook: WebhookServer, bundle: CertificateBundle
) -> None:
    await register(kube, bundle.ca.cert_pem)
    job = tfjob("warned", env=[{"name": "TF_CONFIG", "value": "{}"}])
    warnings = await create_warned(api, "tfjobs", job)
    assert warnings and warnings[0].startswith('299 - "') and "TF_CONFIG" in warnings[0]


async def test_template_restart_policy_replaced_is_told_at_apply(
    api: client.ApiClient, kube: KubeClient, webhook: WebhookServer, bundle: CertificateBundle
) -> None:
    """Kubeflow Trainer #2200: a pod template's restartPolicy is replaced by the replica's; the
    user learns it from `kubectl apply`, before any pod runs."""
    await register(kube, bundle.ca.cert_pem)
    job = tfjob("replaced")
    worker = job["spec"]["tfReplicaSpecs"]["worker"]
    worker["restartPolicy"] = "OnFailure"
    worker["template"]["spec"]["restartPolicy"] = "Never"
    warnings = await create_warned(api, "tfjobs", job)
    replaced = [w for w in warnings if "template.spec.restartPolicy" in w]
    assert len(replaced) == 1, warnings
    assert 'spec.tfReplicaSpecs[Worker].template.spec.restartPolicy: \\"Never\\" is replaced' in replaced[0]
    assert "podFailurePolicy" in replaced[0]


async def test_elastic_job_with_a_master_is_warned_at_apply(
    api: client.ApiClient, kube: KubeClient, webhook: WebhookServer, bundle: CertificateBundle
) -> None:
    """Kubeflow Trainer #2277: an elastic PyTorchJob with a Master is stored with Kubeflow's env,
    and `kubectl apply` tells the user the Master joins the rendezvous beyond PET_NNODES."""
    await register(kube, bundle.ca.cert_pem)
    elastic = job(
        "PyTorchJob",
        "elastic-master",
        {"Master": 1, "Worker": 2},
        namespace="default",
        spec_extra={"elasticPolicy": {"minReplicas": 2, "maxReplicas": 4}},
    )
    warnings = await create_warned(api, "pytorchjobs", elastic)
    expected = master_in_rendezvous_warning({"minReplicas": 2, "maxReplicas": 4})
    assert "up to 5 nodes (maxReplicas 4 + the Master) while PET_NNODES=2:4" in expected
    assert [w for w in warnings if "issue 2277" in w] == [f'299 - "{expected}"'], warnings
    stored = await kube.get(PYTORCHJOBS, "default", "elastic-master")
    # Warned, not changed: the Master is kept and the bounds stay the Workers'.
    assert set(stored["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}
    assert (
        stored["spec"]["elasticPolicy"]["minReplicas"],
        stored["spec"]["elasticPolicy"]["maxReplicas"],
    ) == (2, 4)


@pytest.mark.parametrize("failure_policy", ["Fail", "Ignore"])
async def test_failure_policy_when_the_webhook_is_down(
    kube: KubeClient, webhook: WebhookServer, bundle: CertificateBundle, failure_policy: str
) -> None:
    await register(kube, bundle.ca.cert_pem, failure_policy)
    await webhook.stop()
    if failure_policy == "Fail":
        with pytest.raises(ApiError) as info:
            await kube.create(TFJOBS, tfjob("down"))
        assert 'failed calling webhook "mutate.kubetrain.io"' in info.value.message
    else:
        created = await kube.create(TFJOBS, tfjob("down"))
        assert "worker" in created["spec"]["tfReplicaSpecs"]  # not defaulted: the webhook was skipped


async def test_wrong_ca_bundle_fails_the_call(kube: KubeClient, webhook: WebhookServer) -> None:
    await register(kube, generate_bundle(["other"]).ca.cert_pem)
    with pytest.raises(ApiError) as info:
        await kube.create(TFJOBS, tfjob("untrusted"))
    assert "failed calling webhook" in info.value.message


async def test_self_managed_certificates_patch_ca_bundle(
    tmp_path: Path, kube: KubeClient, devcluster: DevCluster
) -> None:
    await register(kube, None)  # as the chart installs them in self-managed mode: no caBundle
    server = WebhookServer(
        cert_dir=str(tmp_path / "certs"), host="127.0.0.1", port=0, cert_poll_interval=3600
    )
    await server.start()
    devcluster.service_ports[(NS, SERVICE, 443)] = server.port
    certs = SelfManagedCertificates(
        KubeClientCertApi(kube),
        namespace=NS,
        secret_name="kubetrain-webhook-certs",
        service=SERVICE,
        cert_dir=str(tmp_path / "certs"),
        mutating_config=MUTATING,
        validating_config=VALIDATING,
        on_update=server.tls.reload,
        retry_delay=0.05,
    )
    assert not server.ready
    try:
        await certs.start()
        assert server.ready
        created = await kube.create(TFJOBS, tfjob("selfmanaged"))
        assert "Worker" in created["spec"]["tfReplicaSpecs"]  # went through /mutate over verified TLS

        # someone resets the caBundle (e.g. `kubectl apply` of the original manifest): it comes back
        await kube.patch(
            VALIDATING_WEBHOOK_CONFIGURATIONS,
            None,
            VALIDATING,
            [{"op": "remove", "path": "/webhooks/0/clientConfig/caBundle"}],
            patch_type="json",
        )

        async def restored() -> None:
            while True:
                config = await kube.get(VALIDATING_WEBHOOK_CONFIGURATIONS, None, VALIDATING)
                if config["webhooks"][0]["clientConfig"].get("caBundle"):
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(restored(), 10)
        with pytest.raises(ApiError) as info:  # validation goes through with the restored bundle
            await kube.create(TFJOBS, tfjob("bad.name"))
        assert 'admission webhook "validate.kubetrain.io" denied the request' in info.value.message
        assert "metadata.name" in info.value.message
    finally:
        await certs.stop()
        await server.stop()

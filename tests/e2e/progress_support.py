"""What the e2e progress tests do as a pod's training code would: read the endpoint's env and
audience from the pod the operator built, request a token bound to the pod (as the kubelet
does for the projected volume), write the token and the job's CA where the env points, and
read back what `kubectl get` prints (the Table API)."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from kubetrain.api import trainerstatus as ts
from kubetrain.kube.resources import CONFIG_MAPS, ResourceRef

Obj = dict[str, Any]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _progress_volume(pod: Obj) -> Obj:
    return dict(next(v for v in pod["spec"]["volumes"] if v["name"] == ts.VOLUME_NAME))


def audience_of(pod: Obj) -> str:
    return str(_progress_volume(pod)["projected"]["sources"][0]["serviceAccountToken"]["audience"])


def ca_config_map_of(pod: Obj) -> str:
    """The ConfigMap the pod's projected volume reads the endpoint's CA from."""
    sources = _progress_volume(pod)["projected"]["sources"]
    return str(next(s["configMap"]["name"] for s in sources if "configMap" in s))


def env_of(pod: Obj) -> dict[str, str]:
    container = pod["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


async def pod_token(cluster: Any, pod: Obj, audience: str) -> str:
    """A token bound to `pod` for `audience`, requested as the kubelet requests the projected one."""
    md = pod["metadata"]
    account = pod["spec"].get("serviceAccountName") or "default"
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "audiences": [audience],
            "expirationSeconds": 600,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"]},
        },
    }
    answer = await cluster.client.request(
        "create", "POST", f"/api/v1/namespaces/{md['namespace']}/serviceaccounts/{account}/token", body=body
    )
    return str(answer["status"]["token"])


async def endpoint_listening(url: str, within: float = 60.0) -> None:
    """Until the endpoint's port accepts connections: `kubetrain run --status-server-process`
    starts its child once the operator runs, and on a loaded machine the child takes seconds to
    listen — longer than a pod takes to start — so a report sent at once finds nothing there."""
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            _, writer = await asyncio.open_connection(parts.hostname, parts.port)
        except OSError as err:
            if loop.time() > deadline:
                raise AssertionError(
                    f"the training-progress endpoint {url} is not listening after {within} s"
                ) from err
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return


async def sdk_env(cluster: Any, pod: Obj, token: str, url: str, tmp: Path) -> dict[str, str]:
    """The three variables the SDK reads, with the token and the job's CA written where they point
    (once the endpoint listens)."""
    await endpoint_listening(url)
    cm = await cluster.client.get(CONFIG_MAPS, cluster.namespace, ca_config_map_of(pod))
    out = tmp / pod["metadata"]["name"]
    out.mkdir(parents=True, exist_ok=True)
    (out / ts.TOKEN_FILE).write_text(token)
    (out / ts.CA_FILE).write_text(cm["data"][ts.CA_KEY])
    return {ts.ENV_URL: url, ts.ENV_TOKEN: str(out / ts.TOKEN_FILE), ts.ENV_CA_CERT: str(out / ts.CA_FILE)}


def token_in(env: dict[str, str]) -> str:
    return Path(env[ts.ENV_TOKEN]).read_text()


async def post(env: dict[str, str], body: Obj) -> int:
    """The report `body` POSTed as a raw HTTP client would; the endpoint's HTTP status."""
    ctx = ssl.create_default_context(cafile=env[ts.ENV_CA_CERT])
    headers = {"Authorization": f"Bearer {token_in(env)}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(env[ts.ENV_URL], data=json.dumps(body), headers=headers, ssl=ctx) as resp,
    ):
        return resp.status


async def printed_row(cluster: Any, ref: ResourceRef, name: str) -> dict[str, Any]:
    """The job as `kubectl get` prints it: the Table API's columns by name."""
    table = await cluster.client.request("get", "GET", ref.path(cluster.namespace, name), accept=TABLE)
    assert table["kind"] == "Table", table
    names = [c["name"] for c in table["columnDefinitions"]]
    return dict(zip(names, table["rows"][0]["cells"], strict=False))


def trainer_status(job: Obj) -> Obj:
    return dict((job.get("status") or {}).get("trainerStatus") or {})

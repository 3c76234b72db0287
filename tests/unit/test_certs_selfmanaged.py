"""Self-managed certificates against an in-memory API: Secret lifecycle, renewal, caBundle upkeep."""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonpatch

from kubetrain.certs.generate import certificate_sans, renewal_time, signed_by
from kubetrain.certs.kubeapi import CertApiError
from kubetrain.certs.selfmanaged import MUTATING, VALIDATING, SelfManagedCertificates, StoredCertificates

NS, SECRET = "kubetrain-system", "kubetrain-webhook-certs"


class FakeApi:
    """Just enough of the API server: resourceVersions, 409 on conflicts, JSON patch, watches."""

    def __init__(self) -> None:
        self.secrets: dict[str, dict[str, Any]] = {}
        self.configs: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0
        self.patches = 0
        self.watchers: list[asyncio.Queue[tuple[str, str, dict[str, Any]]]] = []

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        return obj

    def _notify(self, key: str, etype: str, obj: dict[str, Any]) -> None:
        for q in self.watchers:
            q.put_nowait((key, etype, copy.deepcopy(obj)))

    def add_config(self, kind: str, name: str, webhooks: int = 2) -> None:
        hooks = [
            {"name": f"h{i}.kubetrain.io", "clientConfig": {"service": {"name": "s"}}}
            for i in range(webhooks)
        ]
        self.configs[(kind, name)] = self._bump({"metadata": {"name": name}, "webhooks": hooks})

    def overwrite_ca_bundle(self, kind: str, name: str, value: str) -> None:
        config = self.configs[(kind, name)]
        for hook in config["webhooks"]:
            hook["clientConfig"]["caBundle"] = value
        self._bump(config)
        self._notify(f"{kind}/{name}", "MODIFIED", config)

    def ca_bundles(self, kind: str, name: str) -> list[bytes]:
        return [
            base64.b64decode(h["clientConfig"].get("caBundle", ""))
            for h in self.configs[(kind, name)]["webhooks"]
        ]

    async def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        s = self.secrets.get(name)
        return copy.deepcopy(s) if s else None

    async def create_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]:
        name = secret["metadata"]["name"]
        if name in self.secrets:
            raise CertApiError(409, "AlreadyExists", "exists")
        self.secrets[name] = self._bump(copy.deepcopy(secret))
        self._notify(f"secret/{name}", "ADDED", self.secrets[name])
        return copy.deepcopy(self.secrets[name])

    async def update_secret(self, namespace: str, secret: dict[str, Any]) -> dict[str, Any]:
        name = secret["metadata"]["name"]
        if self.secrets[name]["metadata"]["resourceVersion"] != secret["metadata"]["resourceVersion"]:
            raise CertApiError(409, "Conflict", "the object has been modified")
        self.secrets[name] = self._bump(copy.deepcopy(secret))
        self._notify(f"secret/{name}", "MODIFIED", self.secrets[name])
        return copy.deepcopy(self.secrets[name])

    async def get_webhook_config(self, kind: str, name: str) -> dict[str, Any] | None:
        c = self.configs.get((kind, name))
        return copy.deepcopy(c) if c else None

    async def patch_webhook_config(self, kind: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
        self.patches += 1
        new = jsonpatch.apply_patch(self.configs[(kind, name)], patch)  # a failed `test` raises
        self.configs[(kind, name)] = self._bump(new)
        self._notify(f"{kind}/{name}", "MODIFIED", new)
        return copy.deepcopy(new)

    async def _watch(self, key: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        q: asyncio.Queue[tuple[str, str, dict[str, Any]]] = asyncio.Queue()
        self.watchers.append(q)
        try:
            while True:
                k, etype, obj = await q.get()
                if k == key:
                    yield etype, obj
        finally:
            self.watchers.remove(q)

    def watch_webhook_config(
        self, kind: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return self._watch(f"{kind}/{name}")

    def watch_secret(
        self, namespace: str, name: str, resource_version: str
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        return self._watch(f"secret/{name}")


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


def manager(
    api: FakeApi, tmp_path: Path, clock: Clock, reloads: list[int] | None = None, **kw: Any
) -> SelfManagedCertificates:
    return SelfManagedCertificates(
        api,
        namespace=NS,
        secret_name=SECRET,
        service="kubetrain-webhook",
        cert_dir=str(tmp_path / "certs"),
        mutating_config="kubetrain-mutating",
        validating_config="kubetrain-validating",
        clock=clock,
        on_update=(lambda: reloads.append(1)) if reloads is not None else None,
        retry_delay=0.01,
        **kw,
    )


def stored(api: FakeApi) -> StoredCertificates:
    return StoredCertificates.from_secret(api.secrets[SECRET])


async def test_first_start_creates_secret_writes_files_and_injects_ca(tmp_path: Path) -> None:
    api, clock, reloads = FakeApi(), Clock(), []
    api.add_config(MUTATING, "kubetrain-mutating")
    api.add_config(VALIDATING, "kubetrain-validating")
    m = manager(api, tmp_path, clock, reloads, extra_ips=["127.0.0.1"])
    await m.sync()
    secret = api.secrets[SECRET]
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt", "ca.key"}
    s = stored(api)
    dns, ips = certificate_sans(s.tls_crt)
    assert "kubetrain-webhook.kubetrain-system.svc" in dns and ips == {"127.0.0.1"}
    assert signed_by(s.tls_crt, s.ca_crt)
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == s.tls_crt
    assert (tmp_path / "certs" / "tls.key").read_bytes() == s.tls_key
    assert reloads == [1]
    for kind, name in ((MUTATING, "kubetrain-mutating"), (VALIDATING, "kubetrain-validating")):
        assert api.ca_bundles(kind, name) == [s.ca_crt, s.ca_crt]


async def test_restart_reuses_the_stored_certificate(tmp_path: Path) -> None:
    api, clock = FakeApi(), Clock()
    api.add_config(MUTATING, "kubetrain-mutating")
    await manager(api, tmp_path, clock).sync()
    first, patches = api.secrets[SECRET]["metadata"]["resourceVersion"], api.patches
    await manager(api, tmp_path / "second", clock).sync()
    assert api.secrets[SECRET]["metadata"]["resourceVersion"] == first  # not rewritten
    assert api.patches == patches  # caBundle already right: no patch


async def test_renewal_keeps_the_ca_and_the_ca_bundle(tmp_path: Path) -> None:
    api, clock, reloads = FakeApi(), Clock(), []
    api.add_config(VALIDATING, "kubetrain-validating")
    m = manager(api, tmp_path, clock, reloads)
    await m.sync()
    before = stored(api)
    clock.now = renewal_time(before.tls_crt) + dt.timedelta(minutes=1)
    await m.sync()
    after = stored(api)
    assert after.tls_crt != before.tls_crt
    assert after.ca_crt == before.ca_crt and signed_by(after.tls_crt, before.ca_crt)
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == after.tls_crt
    assert len(reloads) == 2


async def test_ca_rotation_trusts_old_and_new_ca_while_both_are_valid(tmp_path: Path) -> None:
    api, clock = FakeApi(), Clock()
    api.add_config(MUTATING, "kubetrain-mutating")
    m = manager(api, tmp_path, clock)
    await m.sync()
    old = stored(api)
    clock.now = renewal_time(old.current_ca) + dt.timedelta(days=1)
    await m.sync()
    new = stored(api)
    assert new.current_ca != old.current_ca
    assert signed_by(new.tls_crt, new.current_ca)
    assert old.current_ca in new.ca_crt  # the old CA is still trusted
    assert api.ca_bundles(MUTATING, "kubetrain-mutating")[0] == new.ca_crt


async def test_a_second_replica_uses_the_first_ones_secret(tmp_path: Path) -> None:
    api, clock = FakeApi(), Clock()
    a, b = manager(api, tmp_path / "a", clock), manager(api, tmp_path / "b", clock)
    await asyncio.gather(a.sync(), b.sync())
    s = stored(api)
    assert (tmp_path / "a" / "certs" / "tls.crt").read_bytes() == s.tls_crt
    assert (tmp_path / "b" / "certs" / "tls.crt").read_bytes() == s.tls_crt


async def test_overwritten_ca_bundle_is_put_back_and_deleted_secret_recreated(tmp_path: Path) -> None:
    api, clock, reloads = FakeApi(), Clock(), []
    api.add_config(MUTATING, "kubetrain-mutating")
    api.add_config(VALIDATING, "kubetrain-validating")
    m = manager(api, tmp_path, clock, reloads)
    await m.start()
    try:
        want = stored(api).ca_crt

        async def until(cond: Any) -> None:
            async def loop() -> None:
                while not cond():  # noqa: ASYNC110 - yields to the loop only, no timed wait
                    await asyncio.sleep(0)

            await asyncio.wait_for(loop(), 10)

        await until(lambda: len(api.watchers) == 3)
        api.overwrite_ca_bundle(VALIDATING, "kubetrain-validating", "")  # e.g. a helm upgrade
        await until(lambda: api.ca_bundles(VALIDATING, "kubetrain-validating") == [want, want])
        api.overwrite_ca_bundle(MUTATING, "kubetrain-mutating", base64.b64encode(b"junk").decode())
        await until(lambda: api.ca_bundles(MUTATING, "kubetrain-mutating") == [want, want])

        deleted = api.secrets.pop(SECRET)
        api._notify(f"secret/{SECRET}", "DELETED", deleted)
        await until(lambda: SECRET in api.secrets)
        await until(lambda: api.ca_bundles(MUTATING, "kubetrain-mutating")[0] == stored(api).ca_crt)
        assert (tmp_path / "certs" / "tls.crt").read_bytes() == stored(api).tls_crt
    finally:
        await m.stop()


async def test_missing_webhook_configuration_is_not_fatal(tmp_path: Path) -> None:
    api, clock = FakeApi(), Clock()
    m = manager(api, tmp_path, clock)
    await m.sync()
    assert SECRET in api.secrets and await m.inject_ca_bundle() == 0


async def test_the_conversion_webhook_of_a_crd_gets_the_ca_bundle_and_keeps_it(tmp_path: Path) -> None:
    """mpijobs.kubeflow.org's conversion webhook is called with the same TLS as the admission
    webhooks: its clientConfig.caBundle is injected, and put back when overwritten."""
    from kubetrain.certs.selfmanaged import CRD
    from kubetrain.jobs.crdgen import all_crds

    api, clock = FakeApi(), Clock()
    api.add_config(MUTATING, "kubetrain-mutating")
    (mpi,) = [c for c in all_crds("kubeflow.org") if c["spec"].get("conversion")]
    name = mpi["metadata"]["name"]
    api.configs[(CRD, name)] = api._bump(copy.deepcopy(mpi))
    plain = copy.deepcopy(next(c for c in all_crds("kubeflow.org") if not c["spec"].get("conversion")))
    api.configs[(CRD, plain["metadata"]["name"])] = api._bump(plain)

    def bundle() -> bytes:
        client = api.configs[(CRD, name)]["spec"]["conversion"]["webhook"]["clientConfig"]
        return base64.b64decode(client.get("caBundle", ""))

    m = manager(api, tmp_path, clock, conversion_crds=[name, plain["metadata"]["name"]])
    await m.start()
    try:
        want = stored(api).ca_crt
        assert bundle() == want
        # The service reference is kept; a CRD without a conversion webhook is not touched.
        assert (
            api.configs[(CRD, name)]["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"]
            == "/convert"
        )
        assert api.configs[(CRD, plain["metadata"]["name"])]["spec"] == plain["spec"]

        async def until(cond: Any) -> None:
            async def loop() -> None:
                while not cond():  # noqa: ASYNC110 - yields to the loop only, no timed wait
                    await asyncio.sleep(0)

            await asyncio.wait_for(loop(), 10)

        await until(lambda: len(api.watchers) == 5)  # the Secret, two configurations, two CRDs
        crd = api.configs[(CRD, name)]
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = ""  # `kubectl replace`
        api._bump(crd)
        api._notify(f"{CRD}/{name}", "MODIFIED", crd)
        await until(lambda: bundle() == want)
    finally:
        await m.stop()

"""Self-managed webhook certificates: generate, store in a Secret, renew, inject `caBundle`.

```python
certs = SelfManagedCertificates(
    api, namespace="kubetrain-system", secret_name="kubetrain-webhook-certs",
    service="kubetrain-webhook", cert_dir="/tmp/kubetrain/certs",
    mutating_config="kubetrain-mutating", validating_config="kubetrain-validating",
    on_update=server.tls.reload,
)
await certs.start()   # Secret ready, files written, caBundle patched; keeps watching until stop()
await certs.stop()
```

- The Secret (type `kubernetes.io/tls`) holds `tls.crt`, `tls.key`, `ca.crt` and `ca.key` (the CA
  key is needed to renew the serving certificate under the same CA, so the `caBundle` stays
  valid). Every replica of the webhook uses the same Secret: the first one creates it, the
  others read it (a 409 on create or update means another replica won; its Secret is reused).
- On start and at the renewal time (a third of the lifetime before expiry, see
  kubetrain.certs.generate), the serving certificate is renewed; the CA is renewed the same
  way, and while both are valid the `caBundle` carries the new and the old CA so that API
  servers and replicas still holding the old certificate keep working.
- The certificate files are written into `cert_dir` (the directory the server's ReloadingTLS
  follows) and `on_update()` is called so that new handshakes use them at once.
- Every webhook of the named Mutating/Validating configurations gets `clientConfig.caBundle`,
  with a JSONPatch guarded by a `test` of the webhook's name; so does the conversion webhook of
  each named CRD (`conversion_crds`: mpijobs.kubeflow.org when kubeflow.org is served). The
  configurations, the CRDs and the Secret are watched: if someone (a `helm upgrade`, `kubectl
  apply`) overwrites the caBundle it is put back, and a Secret renewed by another replica is
  picked up.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kubetrain.api.clusterdomain import UNSET, ClusterDomain
from kubetrain.api.labels import LABEL_MANAGED_BY, MANAGED_BY_VALUE
from kubetrain.certs.generate import (
    CertKeyPair,
    KeyType,
    covers,
    generate_ca,
    generate_serving_cert,
    needs_renewal,
    renewal_time,
    service_dns_names,
    signed_by,
)
from kubetrain.certs.kubeapi import CertApi, CertApiError
from kubetrain.certs.tls import write_cert_dir

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]
MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
CRD = "CustomResourceDefinition"  # a CRD with a conversion webhook (mpijobs.kubeflow.org)
MAX_TIMER = dt.timedelta(hours=1)  # re-check at least hourly (clock jumps, suspended VMs)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: Any) -> bytes:
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return b""


def _split_pem(bundle: bytes) -> list[bytes]:
    """The PEM certificates of a bundle, each normalised to end with one newline."""
    marker = b"-----END CERTIFICATE-----"
    return [p.strip() + b"\n" + marker + b"\n" for p in bundle.split(marker)[:-1] if p.strip()]


class StoredCertificates:
    """The certificate material of the Secret (decoded)."""

    def __init__(self, data: dict[str, bytes]) -> None:
        self.tls_crt = data.get("tls.crt", b"")
        self.tls_key = data.get("tls.key", b"")
        self.ca_crt = data.get("ca.crt", b"")  # the CA bundle: current CA first, maybe the previous one
        self.ca_key = data.get("ca.key", b"")

    @classmethod
    def from_secret(cls, secret: dict[str, Any]) -> StoredCertificates:
        raw = secret.get("data") or {}
        return cls({k: _unb64(v) for k, v in raw.items()} if isinstance(raw, dict) else {})

    @property
    def current_ca(self) -> bytes:
        certs = _split_pem(self.ca_crt)
        return certs[0] if certs else b""

    def secret_data(self) -> dict[str, str]:
        return {
            "tls.crt": _b64(self.tls_crt),
            "tls.key": _b64(self.tls_key),
            "ca.crt": _b64(self.ca_crt),
            "ca.key": _b64(self.ca_key),
        }


class SelfManagedCertificates:
    """Keeps the webhook's serving certificate, its Secret and the caBundles in shape."""

    def __init__(
        self,
        api: CertApi,
        *,
        namespace: str,
        secret_name: str,
        service: str,
        cert_dir: str,
        mutating_config: str | None = None,
        validating_config: str | None = None,
        conversion_crds: Sequence[str] = (),
        extra_dns: Sequence[str] = (),
        extra_ips: Sequence[str] = (),
        cluster_domain: ClusterDomain = UNSET,
        key_type: KeyType = "ecdsa",
        clock: Clock = _utcnow,
        on_update: Callable[[], object] | None = None,
        retry_delay: float = 1.0,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.secret_name = secret_name
        self.cert_dir = cert_dir
        # A stored certificate that does not cover these (another cluster domain) is renewed.
        self.dns_names = [*service_dns_names(service, namespace, cluster_domain), *extra_dns]
        self.ip_addresses = list(extra_ips)
        self.key_type: KeyType = key_type
        self.clock = clock
        self.on_update = on_update
        self.retry_delay = retry_delay
        self.configs: list[tuple[str, str]] = []
        if mutating_config:
            self.configs.append((MUTATING, mutating_config))
        if validating_config:
            self.configs.append((VALIDATING, validating_config))
        self.configs += [(CRD, name) for name in conversion_crds]
        self.current: StoredCertificates | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._written: bytes | None = None

    # ---- certificate material -------------------------------------------------------------
    def _usable(self, stored: StoredCertificates, now: dt.datetime) -> bool:
        ca = stored.current_ca
        return bool(
            stored.tls_crt
            and stored.tls_key
            and ca
            and stored.ca_key
            and not needs_renewal(stored.tls_crt, now)
            and not needs_renewal(ca, now)
            and signed_by(stored.tls_crt, ca)
            and covers(stored.tls_crt, self.dns_names, self.ip_addresses)
        )

    def _renewed(self, old: StoredCertificates | None, now: dt.datetime) -> StoredCertificates:
        ca = CertKeyPair(old.current_ca, old.ca_key) if old is not None and old.ca_key else None
        bundle_tail = b""
        if ca is None or not ca.cert_pem or needs_renewal(ca.cert_pem, now):
            if ca is not None and ca.cert_pem and ca.cert.not_valid_after_utc > now:
                bundle_tail = ca.cert_pem  # keep trusting the old CA while it is valid
            ca = generate_ca(now=now, key_type=self.key_type)
        serving = generate_serving_cert(
            ca, self.dns_names, self.ip_addresses, now=now, key_type=self.key_type
        )
        return StoredCertificates(
            {
                "tls.crt": serving.cert_pem,
                "tls.key": serving.key_pem,
                "ca.crt": ca.cert_pem + bundle_tail,
                "ca.key": ca.key_pem,
            }
        )

    async def ensure_secret(self) -> StoredCertificates:
        """Read the Secret; create or renew it when needed. Returns what is now stored."""
        for _ in range(5):
            now = self.clock()
            secret = await self.api.get_secret(self.namespace, self.secret_name)
            stored = StoredCertificates.from_secret(secret) if secret is not None else None
            if stored is not None and self._usable(stored, now):
                return stored
            fresh = self._renewed(stored, now)
            if stored is None or fresh.current_ca != stored.current_ca:
                # A new CA goes into the caBundles first, so it is trusted before anyone serves with it.
                await self.inject_ca_bundle(fresh.ca_crt)
            try:
                if secret is None:
                    log.info("creating webhook certificate Secret %s/%s", self.namespace, self.secret_name)
                    await self.api.create_secret(
                        self.namespace,
                        {
                            "apiVersion": "v1",
                            "kind": "Secret",
                            "type": "kubernetes.io/tls",
                            "metadata": {
                                "name": self.secret_name,
                                "namespace": self.namespace,
                                "labels": {LABEL_MANAGED_BY: MANAGED_BY_VALUE},
                            },
                            "data": fresh.secret_data(),
                        },
                    )
                else:
                    log.info(
                        "renewing the webhook certificate in Secret %s/%s", self.namespace, self.secret_name
                    )
                    secret = dict(secret)
                    secret["data"] = fresh.secret_data()
                    await self.api.update_secret(self.namespace, secret)
            except CertApiError as exc:
                if exc.status == 409:  # another replica created/renewed it first: use theirs
                    continue
                raise
            return fresh
        raise RuntimeError(f"could not settle Secret {self.namespace}/{self.secret_name} after 5 conflicts")

    def _apply(self, stored: StoredCertificates) -> None:
        self.current = stored
        if self._written == stored.tls_crt + stored.tls_key:
            return
        write_cert_dir(self.cert_dir, stored.tls_crt, stored.tls_key, stored.ca_crt)
        self._written = stored.tls_crt + stored.tls_key
        if self.on_update is not None:
            self.on_update()

    async def sync(self) -> None:
        """One full pass: Secret settled, files written, caBundles patched."""
        stored = await self.ensure_secret()
        await self.inject_ca_bundle(stored.ca_crt)
        self._apply(stored)

    # ---- caBundle injection ----------------------------------------------------------------
    async def inject_ca_bundle(self, ca_bundle: bytes | None = None) -> int:
        """Patch `ca_bundle` (default: the current one) into every webhook; returns patches made."""
        bundle = ca_bundle if ca_bundle is not None else (self.current.ca_crt if self.current else b"")
        if not bundle:
            return 0
        patched = 0
        for kind, name in self.configs:
            config = await self.api.get_webhook_config(kind, name)
            if config is None:
                log.warning("%s %s does not exist (yet); caBundle not injected", kind, name)
                continue
            patched += await self._patch_config(kind, name, config, bundle)
        return patched

    async def _patch_config(self, kind: str, name: str, config: dict[str, Any], bundle: bytes) -> int:
        if kind == CRD:
            return await self._patch_crd(name, config, bundle)
        ops: list[dict[str, Any]] = []
        for i, webhook in enumerate(config.get("webhooks") or []):
            client_config = webhook.get("clientConfig") or {}
            if _unb64(client_config.get("caBundle")) == bundle:
                continue
            ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": webhook.get("name")})
            if "clientConfig" not in webhook:
                ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig", "value": {}})
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": _b64(bundle)})
        if not ops:
            return 0
        log.info("patching caBundle into %s %s", kind, name)
        await self.api.patch_webhook_config(kind, name, ops)
        return 1

    async def _patch_crd(self, name: str, crd: dict[str, Any], bundle: bytes) -> int:
        """`spec.conversion.webhook.clientConfig.caBundle` of a CRD whose conversion strategy is
        Webhook (guarded by a `test` of the strategy); a CRD without one is left alone."""
        conversion = (crd.get("spec") or {}).get("conversion") or {}
        webhook = conversion.get("webhook")
        if conversion.get("strategy") != "Webhook" or not isinstance(webhook, dict):
            return 0
        if _unb64((webhook.get("clientConfig") or {}).get("caBundle")) == bundle:
            return 0
        ops: list[dict[str, Any]] = [{"op": "test", "path": "/spec/conversion/strategy", "value": "Webhook"}]
        if "clientConfig" not in webhook:
            ops.append({"op": "add", "path": "/spec/conversion/webhook/clientConfig", "value": {}})
        ops.append(
            {"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": _b64(bundle)}
        )
        log.info("patching caBundle into the conversion webhook of %s %s", CRD, name)
        await self.api.patch_webhook_config(CRD, name, ops)
        return 1

    # ---- background ------------------------------------------------------------------------
    async def start(self) -> None:
        await self.sync()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._renewal_loop(), name="cert-renewal"))
        self._tasks.append(loop.create_task(self._watch_secret(), name="cert-secret-watch"))
        for kind, name in self.configs:
            self._tasks.append(loop.create_task(self._watch_config(kind, name), name=f"watch-{name}"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    def next_renewal(self) -> dt.datetime | None:
        if self.current is None:
            return None
        times = [renewal_time(self.current.tls_crt)]
        if self.current.current_ca:
            times.append(renewal_time(self.current.current_ca))
        return min(times)

    async def _renewal_loop(self) -> None:
        while True:
            due = self.next_renewal()
            wait = MAX_TIMER if due is None else min(max(due - self.clock(), dt.timedelta(0)), MAX_TIMER)
            await asyncio.sleep(wait.total_seconds())
            try:
                await self.sync()
            except Exception as exc:
                log.warning("certificate renewal failed (%s); retrying", exc)
                await asyncio.sleep(self.retry_delay * 10)

    async def _watch_secret(self) -> None:
        async def on_event(etype: str, obj: dict[str, Any]) -> None:
            if etype == "DELETED":
                await self.sync()  # recreate it
                return
            stored = StoredCertificates.from_secret(obj)
            if self.current is not None and stored.tls_crt == self.current.tls_crt:
                return
            await self.sync()  # validates what another replica wrote, renews it if unusable

        await self._watch_loop(
            lambda: self.api.get_secret(self.namespace, self.secret_name),
            lambda rv: self.api.watch_secret(self.namespace, self.secret_name, rv),
            on_event,
        )

    async def _watch_config(self, kind: str, name: str) -> None:
        async def on_event(etype: str, obj: dict[str, Any]) -> None:
            if self.current is not None and etype != "DELETED":
                await self._patch_config(kind, name, obj, self.current.ca_crt)

        await self._watch_loop(
            lambda: self.api.get_webhook_config(kind, name),
            lambda rv: self.api.watch_webhook_config(kind, name, rv),
            on_event,
        )

    async def _watch_loop(self, get: Any, watch: Any, on_event: Any) -> None:
        """get → handle → watch from its resourceVersion; on any error or end, start over."""
        delay = self.retry_delay
        while True:
            try:
                obj = await get()
                rv = ""
                if obj is not None:
                    await on_event("ADDED", obj)
                    rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
                async for etype, event_obj in watch(rv):
                    if etype in ("ADDED", "MODIFIED", "DELETED"):
                        await on_event(etype, event_obj)
                    delay = self.retry_delay
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("certificate watch interrupted (%s); restarting in %.0fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)

"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

    elector = LeaderElector(
        client, namespace="kubetrain-system", name="kubetrain-controller",
        on_started_leading=controller.run,     # may be async: run as a task while we lead
        on_stopped_leading=lambda: ...,        # called once leadership ends (lost or released)
    )
    await elector.run()      # returns when leadership is lost, or after stop() (releasing it)
    elector.is_leader        # whether this process leads right now
    elector.leader           # the holder last observed (ours or another's identity)

- Acquire: the Lease is free when it does not exist (created with us as holder), has an empty
  `holderIdentity` (released), or has not been renewed for `lease_duration` seconds *as observed
  locally* (the holder's `renewTime` is not compared with our clock; skew-proof like client-go).
  Taking over from another holder bumps `leaseTransitions` and sets `acquireTime`.
- Every write is a PUT carrying the resourceVersion we read: two candidates racing for the same
  Lease cannot both win (the loser gets 409 and keeps waiting).
- Renew every `retry_period`; if no renewal succeeds within `renew_deadline`, leadership is lost:
  the task started for `on_started_leading` is cancelled, `on_stopped_leading` runs and `run()`
  returns (callers usually exit the process so that a restart starts from a clean state).
- `stop()` (or cancelling `run()`) releases the Lease: holder set to "" so a standby takes over
  at its next retry instead of waiting out the lease.
Durations must satisfy lease_duration > renew_deadline > retry_period > 0; `leaseDurationSeconds`
is written rounded up to whole seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import socket
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubetrain.kube.client import ApiError, KubeClient
from kubetrain.kube.clock import SYSTEM_CLOCK, Clock
from kubetrain.kube.resources import LEASES

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def micro_time(when: datetime) -> str:
    """metav1.MicroTime wire format: 2024-01-01T00:00:00.000000Z."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        name: str,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started_leading: Callable[[], Any] | None = None,
        on_stopped_leading: Callable[[], Any] | None = None,
        on_new_leader: Callable[[str], Any] | None = None,
        release_on_stop: bool = True,
        clock: Clock | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError(
                "leader election needs lease_duration > renew_deadline > retry_period > 0 "
                f"(got {lease_duration}, {renew_deadline}, {retry_period})"
            )
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.release_on_stop = release_on_stop
        self._clock = clock or SYSTEM_CLOCK
        self._is_leader = False
        self._stopping = asyncio.Event()
        self._observed_spec: Obj | None = None
        self._observed_rv: str | None = None
        self._observed_at = 0.0
        self._leading_task: asyncio.Task[Any] | None = None
        self._callback_tasks: set[asyncio.Future[Any]] = set()
        self.leader: str | None = None

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    def stop(self) -> None:
        """Ask `run()` to release the Lease (when `release_on_stop`) and return."""
        self._stopping.set()

    # --- main loop --------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            if not await self._acquire():
                return  # stopped before becoming leader
            self._is_leader = True
            log.info("%s became leader of lease %s/%s", self.identity, self.namespace, self.name)
            self._start_leading()
            await self._renew_loop()
        except asyncio.CancelledError:
            self._stopping.set()
            raise
        finally:
            was_leader = self._is_leader
            self._is_leader = False
            await self._cancel_leading()
            if was_leader:
                if self._stopping.is_set() and self.release_on_stop:
                    await asyncio.shield(self._release())
                log.info("%s stopped leading lease %s/%s", self.identity, self.namespace, self.name)
                self._call(self.on_stopped_leading)

    async def _acquire(self) -> bool:
        while not self._stopping.is_set():
            if await self.try_acquire_or_renew():
                return True
            await self._wait(self.retry_period)
        return False

    async def _renew_loop(self) -> None:
        while not self._stopping.is_set():
            await self._wait(self.retry_period)
            if self._stopping.is_set():
                return
            deadline = self._clock.monotonic() + self.renew_deadline
            while True:
                remaining = deadline - self._clock.monotonic()
                if remaining <= 0:
                    log.warning(
                        "%s failed to renew lease %s/%s in time", self.identity, self.namespace, self.name
                    )
                    return
                try:
                    async with asyncio.timeout(remaining):
                        renewed = await self.try_acquire_or_renew()
                except TimeoutError:
                    renewed = False
                if renewed:
                    break
                if self._stopping.is_set():
                    return
                await self._wait(min(self.retry_period, max(0.0, deadline - self._clock.monotonic())))

    async def _wait(self, seconds: float) -> None:
        """Sleep on the clock, waking early on stop()."""
        if seconds <= 0:
            return
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            stopper.cancel()

    # --- one attempt ------------------------------------------------------------------------------
    async def try_acquire_or_renew(self) -> bool:
        """One acquire/renew attempt; True when we hold the Lease afterwards."""
        now = self._clock.now()
        try:
            lease = await self.client.get(LEASES, self.namespace, self.name)
        except ApiError as err:
            if not err.is_not_found:
                log.warning("leader election: reading lease %s/%s: %s", self.namespace, self.name, err)
                return False
            return await self._create(now)

        spec: Obj = lease.get("spec") or {}
        rv = (lease.get("metadata") or {}).get("resourceVersion")
        self._observe(spec, rv)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and not self._expired(spec):
            return False

        new_spec: Obj = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "renewTime": micro_time(now),
            "acquireTime": spec.get("acquireTime") if holder == self.identity else micro_time(now),
            "leaseTransitions": int(spec.get("leaseTransitions") or 0)
            + (0 if holder == self.identity else 1),
        }
        if holder == self.identity and not spec.get("acquireTime"):
            new_spec["acquireTime"] = micro_time(now)
        lease["spec"] = new_spec
        try:
            updated = await self.client.replace(LEASES, lease)
        except ApiError as err:
            if not err.is_conflict:
                log.warning("leader election: updating lease %s/%s: %s", self.namespace, self.name, err)
            return False
        self._observe(updated.get("spec") or new_spec, (updated.get("metadata") or {}).get("resourceVersion"))
        return True

    async def _create(self, now: datetime) -> bool:
        spec: Obj = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": 0,
        }
        lease: Obj = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        }
        try:
            created = await self.client.create(LEASES, lease)
        except ApiError as err:
            if not err.is_already_exists:
                log.warning("leader election: creating lease %s/%s: %s", self.namespace, self.name, err)
            return False
        self._observe(created.get("spec") or spec, (created.get("metadata") or {}).get("resourceVersion"))
        return True

    def _observe(self, spec: Obj, rv: str | None) -> None:
        """Remember when (locally) the lease record last changed; expiry is measured from that."""
        if self._observed_spec is None or rv != self._observed_rv or spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_rv = rv
            self._observed_at = self._clock.monotonic()
        holder = spec.get("holderIdentity") or None
        if holder != self.leader:
            self.leader = holder
            if holder:
                self._call(self.on_new_leader, holder)

    def _expired(self, spec: Obj) -> bool:
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        return self._clock.monotonic() >= self._observed_at + duration

    async def _release(self) -> None:
        try:
            lease = await self.client.get(LEASES, self.namespace, self.name)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = micro_time(self._clock.now())
            lease["spec"] = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0),
            }
            await self.client.replace(LEASES, lease)
            log.info("%s released lease %s/%s", self.identity, self.namespace, self.name)
        except ApiError as err:
            log.warning("leader election: releasing lease %s/%s: %s", self.namespace, self.name, err)

    # --- callbacks --------------------------------------------------------------------------------
    def _start_leading(self) -> None:
        if self.on_started_leading is None:
            return
        try:
            result = self.on_started_leading()
        except Exception:
            log.exception("on_started_leading failed")
            return
        if inspect.isawaitable(result):
            self._leading_task = asyncio.ensure_future(result)

    async def _cancel_leading(self) -> None:
        task, self._leading_task = self._leading_task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    def _call(self, fn: Callable[..., Any] | None, *args: Any) -> None:
        if fn is None:
            return
        try:
            result = fn(*args)
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._callback_tasks.add(task)
                task.add_done_callback(self._callback_tasks.discard)
        except Exception:
            log.exception("leader election callback failed")

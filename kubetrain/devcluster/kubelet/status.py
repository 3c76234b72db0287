"""The pod simulator's status transitions and the writes that carry them.

`PodTransitions` moves a pod bound to a simulated node through its life, as a kubelet would:
`start` (Pending → Running: podIP, hostIP, containers running and ready), `run_ended` (the
annotated run is over: exit, in-place restart or eviction, as the pod's restartPolicy and
annotations decide; a restart waits out the crash-loop back-off, `crashloop.py`),
`retry_crashed` (that back-off is over: the containers run again), `observe_generation` (a spec
update: the status again, observing the new generation) and `finish_deletion` (containers
terminated with exit 143, then DELETE with gracePeriodSeconds=0). Each is a
`StatusBuilder` — the new status computed from the newest pod by the pure builders of
`podstatus`, `crashstatus` and `initstatus`, or None for "nothing to write" — given to
`write_status` (`statuswrite.py`, which `PodTransitions` extends: the PUT of the `status`
subresource, re-read and rebuilt on 409, each kubelet write told to `written` for the kubelet's
Events, `eventrecorders.py`). It also keeps what a kubelet remembers per pod: pod IPs, the start time
of each container run, each container's back-off entry and last exit, and the pods it already
deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.metatime import parse_time
from kubetrain.devcluster.client import ApiError, RawApi
from kubetrain.devcluster.kubelet import crashloop, crashstatus, images, initstatus, podstatus
from kubetrain.devcluster.kubelet.behaviour import Behaviour, exit_outcome
from kubetrain.devcluster.kubelet.git import SimulatedGit
from kubetrain.devcluster.kubelet.recorder import Activity
from kubetrain.devcluster.kubelet.scheduling import Key, PodTimers
from kubetrain.devcluster.kubelet.statuswrite import StatusBuilder, StatusWriter, pod_phase
from kubetrain.kube.clock import Clock

TERMINATION_EXIT_CODE = 143
_EARLY = timedelta(milliseconds=1)  # how early a back-off timer may wake and still restart


def _uid(pod: dict[str, Any]) -> str:
    return str(pod["metadata"].get("uid", ""))


class PodTransitions(StatusWriter):
    """A pod's life on a simulated node (the module's docstring); its writes are `StatusWriter`'s."""

    def __init__(
        self,
        api: Callable[[], RawApi],
        clock: Clock,
        pods: dict[Key, dict[str, Any]],
        host_ips: dict[str, str],
        timers: PodTimers,
        default_run_seconds: float | None,
        git: SimulatedGit | None = None,
        written: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
        activity: Activity | None = None,
    ) -> None:
        super().__init__(api, pods, written, activity)
        self.clock = clock
        self._host_ips = host_ips
        self._timers = timers
        self.default_run_seconds = default_run_seconds
        self._starts: dict[tuple[str, int], float] = {}  # (uid, restartCount) -> clock.monotonic()
        self._pod_ips: dict[str, str] = {}
        self._ip_counter = 0
        self._deleted: set[str] = set()  # uids this kubelet already removed
        # (uid, container) -> its crash-loop back-off entry, and the time of its latest exit
        self._back_offs: dict[tuple[str, str], crashloop.BackOff] = {}
        self._exits: dict[tuple[str, str], datetime] = {}
        self.git = git if git is not None else SimulatedGit()  # the remotes code-sync fetches reach
        self._observed: dict[str, int] = {}  # uid -> the generation a spec update was last observed for

    def ours(self, pod: dict[str, Any]) -> bool:
        return (pod.get("spec") or {}).get("nodeName") in self._host_ips

    def forget(self, uid: str) -> None:
        """The pod is gone: drop what was remembered about it."""
        self._deleted.discard(uid)
        self._pod_ips.pop(uid, None)
        self._observed.pop(uid, None)
        self._starts = {k: v for k, v in self._starts.items() if k[0] != uid}
        self._back_offs = {k: v for k, v in self._back_offs.items() if k[0] != uid}
        self._exits = {k: v for k, v in self._exits.items() if k[0] != uid}

    def remembered(self) -> int:
        """Pods this kubelet remembers anything about (0 once every pod is gone)."""
        kept = {uid for uid, _ in self._starts} | {uid for uid, _ in self._back_offs}
        kept |= self._observed.keys()
        return len(kept | {uid for uid, _ in self._exits} | self._pod_ips.keys() | self._deleted)

    def run_started(self, uid: str, restarts: int) -> float:
        """clock.monotonic() when run `restarts` of the pod began (now, if not known yet)."""
        return self._starts.setdefault((uid, restarts), self.clock.monotonic())

    def _pod_ip(self, pod: dict[str, Any]) -> str:
        spec = pod.get("spec") or {}
        if spec.get("hostNetwork"):
            return self._host_ips[spec["nodeName"]]
        uid = _uid(pod)
        if uid not in self._pod_ips:
            self._ip_counter += 1
            self._pod_ips[uid] = f"10.244.{self._ip_counter // 250}.{self._ip_counter % 250 + 2}"
        return self._pod_ips[uid]

    # -- transitions ----------------------------------------------------------------------------

    async def start(self, key: Key) -> None:
        await self._start(key, retry=False)

    async def retry_init(self, key: Key) -> None:
        """The back-off of a failed init container is over: run it again (initstatus.py)."""
        await self._start(key, retry=True)

    async def _start(self, key: Key, *, retry: bool) -> None:
        def build(pod: dict[str, Any]) -> dict[str, Any] | None:
            if not self.ours(pod) or pod_phase(pod) != "Pending" or pod["metadata"].get("deletionTimestamp"):
                return None
            if initstatus.init_backing_off(pod) != retry:
                return None  # backing off: only its retry runs it again; not: nothing to retry
            host_ip = self._host_ips[pod["spec"]["nodeName"]]
            now = self.clock.now()
            outcomes: podstatus.InitOutcomes = {}
            for container in pod["spec"].get("initContainers") or []:
                code, message = self.git.init_outcome(container)
                outcomes[container["name"]] = (code, message)
                if code != 0:  # init containers run in order: the first failure stops the pod
                    return initstatus.init_failed_status(
                        pod,
                        container["name"],
                        code,
                        message,
                        host_ip=host_ip,
                        pod_ip=self._pod_ip(pod),
                        now=now,
                    )
            return initstatus.keep_init_restarts(
                pod,
                podstatus.running_status(
                    pod, host_ip=host_ip, pod_ip=self._pod_ip(pod), now=now, init_outcomes=outcomes
                ),
            )

        await self.write_status(key, build)

    async def observe_generation(self, key: Key) -> None:
        """The spec of a pod this kubelet runs changed (a new `metadata.generation`, e.g. an
        activeDeadlineSeconds or image update): its status again, now observing that
        generation — the kubelet's next sync regenerates the status (`generateAPIPodStatus`)
        and the status manager writes it since observedGeneration differs. Not for a pod it has
        written nothing for yet, nor one that ended or is being deleted (that write follows):
        `podstatus.unobserved_generation`."""

        def build(pod: dict[str, Any]) -> dict[str, Any] | None:
            generation = podstatus.unobserved_generation(pod)
            if not self.ours(pod) or generation is None or self._observed.get(_uid(pod)) == generation:
                return None
            # once per generation: a server that drops the field (its feature gate off) is not
            # written to again and again
            self._observed[_uid(pod)] = generation
            return dict(pod.get("status") or {})

        await self.write_status(key, build)

    async def cannot_start(self, key: Key, found: tuple[bool, str, tuple[str, str]] | None = None) -> None:
        """A container whose image the kubelet cannot use (images.py), or `found` (init?, name,
        (reason, message): envrefs.py): the pod stays Pending with it waiting — written once;
        the pull back-off (`pull_back_off`) follows on a timer."""
        await self.write_status(key, self._blocked(back_off=False, found=found))

    async def pull_back_off(self, key: Key) -> None:
        """ErrImagePull becomes ImagePullBackOff, as the kubelet's pull back-off begins."""
        await self.write_status(key, self._blocked(back_off=True))

    def _blocked(
        self, *, back_off: bool, found: tuple[bool, str, tuple[str, str]] | None = None
    ) -> StatusBuilder:
        def build(pod: dict[str, Any]) -> dict[str, Any] | None:
            if not self.ours(pod) or pod_phase(pod) != "Pending" or pod["metadata"].get("deletionTimestamp"):
                return None
            reasons = images.waiting_reasons(pod)
            if found is not None:
                if images.waiting_with(pod, found[1]) == found[2]:
                    return None  # already said
            elif ("ErrImagePull" not in reasons) if back_off else bool(reasons & images.REASONS):
                return None  # nothing to move on to, or already said
            return images.blocked_status(
                pod,
                host_ip=self._host_ips[pod["spec"]["nodeName"]],
                pod_ip=self._pod_ip(pod),
                now=self.clock.now(),
                back_off=back_off,
                found=found,
            )

        return build

    async def run_ended(self, key: Key) -> None:
        pod = self._pods.get(key)
        if pod is None or pod_phase(pod) != "Running":
            return
        behaviour = Behaviour.from_pod(pod, self.default_run_seconds)
        if behaviour.reason == "Evicted":
            await self.write_status(key, self.running_only(self.evict_builder()))
            return
        outcome = exit_outcome(
            pod, behaviour.exit_code, podstatus.restart_count(pod), behaviour.restarts_before_exit
        )
        if outcome == "restart":
            build = self.crash_builder(behaviour.exit_code, behaviour.reason)
            await self.write_status(key, self.running_only(build))
        else:
            await self.write_status(
                key, self.running_only(self.exit_builder(behaviour.exit_code, behaviour.reason))
            )

    def crash_builder(self, exit_code: int, reason: str | None) -> StatusBuilder:
        """Every container exits with `exit_code` and is restarted: at once after its first exit
        (or after a run of over 10 minutes), else after its crash-loop back-off (`crashloop.py`)."""
        back_offs = dict(self._back_offs)  # as before this exit: a rebuild on 409 moves on once

        def build(pod: dict[str, Any]) -> dict[str, Any]:
            now, uid = self.clock.now(), _uid(pod)
            names = [c["name"] for c in pod["spec"].get("containers") or []]
            waits = {}
            for name in names:
                entry = back_offs.get((uid, name))
                self._exits[(uid, name)] = now
                if crashloop.in_back_off(entry, now, now) and entry is not None:
                    waits[name] = entry.delay
                else:
                    self._back_offs[(uid, name)] = crashloop.next_back_off(entry, now, now)
            exits = dict.fromkeys(names, (exit_code, reason))
            status = crashstatus.crashed_status(pod, exits=exits, waits=waits, now=now)
            self._started(pod, status)
            return status

        return build

    def crash_due(self, pod: dict[str, Any]) -> datetime | None:
        """When the first of the pod's containers waiting in CrashLoopBackOff runs again (None:
        none waits). One whose back-off this kubelet does not know runs at once, as a kubelet
        with no back-off entry for it would."""
        uid, now = _uid(pod), self.clock.now()
        dues = []
        for name, finished in crashstatus.backing_off(pod):
            entry = self._back_offs.get((uid, name))
            exited = self._exits.get((uid, name)) or parse_time(finished) or now
            dues.append(now if entry is None else exited + timedelta(seconds=entry.delay))
        return min(dues) if dues else None

    async def retry_crashed(self, key: Key) -> None:
        """The crash-loop back-off of the pod's waiting containers is over: they run again. A
        timer that woke a moment early (within `_EARLY`) counts as on time; one that woke
        earlier, or a container whose back-off ends later, gets a new timer."""
        back_offs = dict(self._back_offs)

        def build(pod: dict[str, Any]) -> dict[str, Any] | None:
            if pod["metadata"].get("deletionTimestamp"):
                return None
            now, uid = self.clock.now(), _uid(pod)
            names = []
            for name, finished in crashstatus.backing_off(pod):
                exited = self._exits.get((uid, name)) or parse_time(finished) or now
                entry = back_offs.get((uid, name))
                if not crashloop.in_back_off(entry, exited, now + _EARLY):
                    self._back_offs[(uid, name)] = crashloop.next_back_off(entry, exited, now)
                    names.append(name)
            if not names:
                return None
            status = crashstatus.retried_status(pod, names, now)
            self._started(pod, status)
            return status

        pod = await self.write_status(key, self.running_only(build))
        if pod is None or pod_phase(pod) != "Running" or pod["metadata"].get("deletionTimestamp"):
            return
        due = self.crash_due(pod)
        if due is not None:
            delay = max(_EARLY.total_seconds(), (due - self.clock.now()).total_seconds())
            self._timers.schedule(key, ("crash-retry", _uid(pod), due), delay, self.retry_crashed)

    def _started(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        """Remember when the run `status` starts began (a restart of the first container)."""
        restarts = podstatus.restart_count({**pod, "status": status})
        if restarts != podstatus.restart_count(pod):
            self._starts[(_uid(pod), restarts)] = self.clock.monotonic()

    def running_only(self, build: StatusBuilder) -> StatusBuilder:
        def guarded(pod: dict[str, Any]) -> dict[str, Any] | None:
            if pod_phase(pod) != "Running" or pod["metadata"].get("deletionTimestamp"):
                return None
            return build(pod)

        return guarded

    def evict_builder(self) -> StatusBuilder:
        return lambda pod: podstatus.evicted_status(pod, now=self.clock.now())

    def exit_builder(
        self, exit_code: int, reason: str | None, container_codes: Mapping[str, int] | None = None
    ) -> StatusBuilder:
        return lambda pod: podstatus.terminated_status(
            pod, exit_code=exit_code, reason=reason, now=self.clock.now(), container_codes=container_codes
        )

    def restart_builder(
        self, exit_code: int, reason: str | None, container: str | None = None
    ) -> StatusBuilder:
        """The test API's in-place restart: `container` (default: every container) exits and
        runs again at once, as when its back-off is over; its back-off entry moves on."""
        back_offs = dict(self._back_offs)

        def build(pod: dict[str, Any]) -> dict[str, Any]:
            now, uid = self.clock.now(), _uid(pod)
            names = [c["name"] for c in pod["spec"].get("containers") or [] if container in (None, c["name"])]
            for name in names:
                self._back_offs[(uid, name)] = crashloop.next_back_off(back_offs.get((uid, name)), now, now)
                self._exits[(uid, name)] = now
            exits = dict.fromkeys(names, (exit_code, reason))
            status = crashstatus.crashed_status(pod, exits=exits, waits={}, now=now)
            self._started(pod, status)
            return status

        return build

    async def finish_deletion(self, key: Key) -> None:
        self._timers.cancel(key)
        pod = self._pods[key]
        if _uid(pod) in self._deleted:
            return
        if pod_phase(pod) not in podstatus.TERMINAL_PHASES:

            def build(p: dict[str, Any]) -> dict[str, Any] | None:
                if pod_phase(p) in podstatus.TERMINAL_PHASES:
                    return None
                return podstatus.terminated_status(
                    p, exit_code=TERMINATION_EXIT_CODE, reason="Error", now=self.clock.now()
                )

            written = await self.write_status(key, build)
            pod = written or pod
        ns, name = key
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": pod["metadata"].get("uid")},
        }
        code, body = await self._api().request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", body=options)
        if code not in (200, 202, 404, 409):
            raise ApiError(code, body)
        self._deleted.add(_uid(pod))

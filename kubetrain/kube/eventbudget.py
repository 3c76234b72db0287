"""The budget of an EventRecorder's budgeted events: client-go's EventCorrelator, without I/O.

    budget = EventBudget(clock)
    message, combined = budget.aggregate(obj_id, "Normal", "SuccessfulCreatePod", "Created pod: j-worker-0")
    if budget.allow(obj_id): ...   # write it (create, or bump the Event it aggregates into)

It follows client-go's `tools/record/events_cache.go` (`NewEventCorrelator`, as of the v0.31
client-go that training-operator 1.9 and KubeDL are built with), in `EventCorrelate`'s order:
1. `EventAggregator.EventAggregate`: events about one object with one type and reason but
   different messages — `Created pod: j-worker-0`, `… j-worker-1`, … — are counted per
   (object, type, reason) over a window that restarts after AGGREGATE_INTERVAL seconds without
   one; from the AGGREGATE_MAX_EVENTS-th distinct message on, each is written as one Event
   `(combined from similar events): <message>` whose count and message the next ones update.
   (client-go drops an arbitrary message from a full set, `sets.PopAny`; here the oldest.)
2. the recorder's own de-duplication (`eventLogger`): an identical event bumps count and
   lastTimestamp of the Event it wrote (`kubetrain.kube.events`);
3. `EventSourceObjectSpamFilter.Filter`: a token bucket per source and involved object
   (`getSpamKey` — v0.31 keys on the object alone; client-go v0.32 added the event type),
   SPAM_BURST tokens refilled at SPAM_QPS (one every 5 minutes). Every write — a new Event or a
   bump — takes a token; an event without one is not written.
Both caches hold the last CACHE_SIZE keys (client-go's `maxLruCacheEntries`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubetrain.kube.clock import Clock

SPAM_BURST = 25  # client-go's defaultSpamBurst
SPAM_QPS = 1.0 / 300.0  # client-go's defaultSpamQPS: one event every 5 minutes
AGGREGATE_MAX_EVENTS = 10  # client-go's defaultAggregateMaxEvents
AGGREGATE_INTERVAL = 600.0  # client-go's defaultAggregateIntervalInSeconds
CACHE_SIZE = 4096  # client-go's maxLruCacheEntries
COMBINED_PREFIX = "(combined from similar events): "  # EventAggregatorByReasonMessageFunc

ObjectId = tuple[str, ...]


def object_id(obj: Mapping[str, Any], *, kind: str = "", api_version: str = "") -> ObjectId:
    """The involved object as the correlator keys it (client-go's `getSpamKey` and aggregate key
    read the involvedObject's uid, kind, namespace, name and apiVersion); `kind`/`api_version`
    stand in for an object that does not carry them."""
    meta = obj.get("metadata") or {}
    return (
        str(meta.get("uid") or ""),
        str(obj.get("kind") or kind),
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or ""),
        str(obj.get("apiVersion") or api_version),
    )


K = TypeVar("K")
V = TypeVar("V")


@dataclass
class _Bucket:
    """A token bucket as golang.org/x/time/rate's Limiter (flowcontrol's passive limiter)."""

    tokens: float
    last: float


@dataclass
class _Similar:
    messages: OrderedDict[str, None] = field(default_factory=OrderedDict)
    last: float = float("-inf")


class EventBudget:
    def __init__(
        self,
        clock: Clock,
        *,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
        max_events: int = AGGREGATE_MAX_EVENTS,
        interval: float = AGGREGATE_INTERVAL,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        if burst < 1 or qps <= 0 or max_events < 1 or interval <= 0 or cache_size < 1:
            raise ValueError(
                "event budget: burst, max_events and cache_size must be >= 1, qps and interval > 0"
            )
        self._clock = clock
        self.burst = burst
        self.qps = qps
        self.max_events = max_events
        self.interval = interval
        self.cache_size = cache_size
        self._buckets: OrderedDict[ObjectId, _Bucket] = OrderedDict()
        self._similar: OrderedDict[tuple[str, ...], _Similar] = OrderedDict()

    def aggregate(self, obj: ObjectId, type_: str, reason: str, message: str) -> tuple[str, bool]:
        """The message to write for this event, and whether it is the combined one
        (`EventAggregator.EventAggregate`)."""
        now = self._clock.monotonic()
        key = (*obj, type_, reason)
        record = self._similar.get(key)
        if record is None or now - record.last > self.interval:
            record = _Similar()
        record.messages[message] = None
        record.messages.move_to_end(message)
        record.last = now
        _put(self._similar, key, record, self.cache_size)
        if len(record.messages) < self.max_events:
            return message, False
        record.messages.popitem(last=False)  # the set stays below max_events
        return COMBINED_PREFIX + message, True

    def allow(self, obj: ObjectId) -> bool:
        """Take a token of `obj`'s bucket (`EventSourceObjectSpamFilter.Filter`); False: none left."""
        now = self._clock.monotonic()
        bucket = self._buckets.get(obj)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
        else:
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) * self.qps)
            bucket.last = now
        _put(self._buckets, obj, bucket, self.cache_size)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return True
        return False


def _put(cache: OrderedDict[K, V], key: K, value: V, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)

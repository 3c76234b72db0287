"""Request accounting: every API request by verb, resource, user agent, for API-call budgets.

The log keeps the newest `limit` requests (default 100 000: about 18 MB, its repeated strings
interned) so that a devcluster that runs for days under churn does not grow without
end; `total` counts every request since the last reset(). Counting over a log that dropped
requests would undercount, so `count`, `by_verb` and `summary` then raise
`RequestLogTruncated`: reset() before what is measured.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

DEFAULT_LIMIT = 100_000


class RequestLogTruncated(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class RequestRecord:
    verb: str  # get list watch create update patch delete deletecollection (kube's request verbs)
    resource: str  # plural, with "/subresource" for subresource requests (e.g. "pods/status")
    group: str
    namespace: str
    name: str
    user_agent: str
    code: int = 0
    user: str = ""  # the authenticated username


class RequestLog:
    """`count(verb=None, resource=None, user_agent=None)`: matching requests since the last reset().

    `resource` matches "pods" (main resource only), "pods/status", or "pods/*" (any subresource
    and the main resource). `user_agent` matches as a prefix (client agents append versions).
    """

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"request log limit must be at least 1, not {limit}")
        self.limit = limit
        self.records: deque[RequestRecord] = deque(maxlen=limit)  # the newest `limit`, oldest first
        self.total = 0  # requests since the last reset(), kept or dropped

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)
        self.total += 1

    def reset(self) -> None:
        self.records.clear()
        self.total = 0

    @property
    def dropped(self) -> int:
        """Requests since the last reset() no longer in `records` (the oldest beyond `limit`)."""
        return max(0, self.total - len(self.records))

    def _complete(self) -> deque[RequestRecord]:
        if self.dropped:
            raise RequestLogTruncated(
                f"the request log keeps the newest {self.limit} requests and {self.dropped} of the "
                f"{self.total} since the last reset() were dropped: reset() before what is counted"
            )
        return self.records

    def _matches(
        self,
        r: RequestRecord,
        verb: str | None,
        resource: str | None,
        user_agent: str | None,
        namespace: str | None,
    ) -> bool:
        if verb is not None and r.verb != verb:
            return False
        if resource is not None:
            if resource.endswith("/*"):
                if r.resource.split("/")[0] != resource[:-2]:
                    return False
            elif r.resource != resource:
                return False
        if user_agent is not None and not r.user_agent.startswith(user_agent):
            return False
        return namespace is None or r.namespace == namespace

    def count(
        self,
        verb: str | None = None,
        resource: str | None = None,
        user_agent: str | None = None,
        namespace: str | None = None,
    ) -> int:
        return sum(1 for r in self._complete() if self._matches(r, verb, resource, user_agent, namespace))

    def by_verb(self) -> Counter[str]:
        return Counter(r.verb for r in self._complete())

    def summary(self) -> Counter[tuple[str, str]]:
        return Counter((r.verb, r.resource) for r in self._complete())

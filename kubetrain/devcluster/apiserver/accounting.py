"""Request accounting: every API request by verb, resource, user agent, for API-call budgets."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


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

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)

    def reset(self) -> None:
        self.records.clear()

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
        return sum(1 for r in self.records if self._matches(r, verb, resource, user_agent, namespace))

    def by_verb(self) -> Counter[str]:
        return Counter(r.verb for r in self.records)

    def summary(self) -> Counter[tuple[str, str]]:
        return Counter((r.verb, r.resource) for r in self.records)

"""A stand-in for devcluster's `RawApi` in unit tests of code that writes through it (the Event
recorders): it records each request and answers as an API server that accepts every write. Import
with `from fakeapi import RecordingApi` (tests/ is on pytest's `pythonpath`)."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


class RecordingApi:
    """Records each request (method, path, body); PATCHes of names in `gone` answer 404, other
    PATCHes 200 and creates 201, each echoing the body."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Obj]] = []
        self.gone: set[str] = set()

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> tuple[int, Any]:
        self.requests.append((method, path, body))
        if method == "PATCH" and path.rsplit("/", 1)[1] in self.gone:
            return 404, {"reason": "NotFound"}
        return (200 if method == "PATCH" else 201), body

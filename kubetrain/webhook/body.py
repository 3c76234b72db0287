"""Reading a request body within limits: its size, the bytes being read by every request at
once, and a deadline for the whole body.

```python
bodies = BodyReader(max_body_bytes=7 << 20, max_inflight_bytes=64 << 20, timeout=10.0)
data = await bodies.read(request.content_length, request.content.read)
# raises BadReview (too large), TooBusy (the bodies in flight fill max_inflight_bytes),
# Aborted (the client went away or stalled past the timeout)
data = bodies.take(request.content_length, request.content.read_nowait)  # arrived whole
```

`take` is the same checks without the wait: a body aiohttp has already buffered to its end (the
usual case for a review, which arrives in one or two TLS records) is taken at once, with no
deadline armed nor chunk loop, at the same limits and with the same messages as `read`.

The server turns these into HTTP answers (kubetrain.webhook.refusals); nothing here knows HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kubetrain.webhook.review import BadReview

CHUNK_BYTES = 65536


class TooBusy(Exception):
    """The bodies being read already fill `max_inflight_bytes`."""


class Aborted(Exception):
    """The client went away (or stalled past the body timeout) before sending the whole body."""


class BodyReader:
    """Reads bodies for one server, counting the bytes every request is reading at once."""

    def __init__(self, *, max_body_bytes: int, max_inflight_bytes: int, timeout: float) -> None:
        self.max_body_bytes = max_body_bytes
        self.max_inflight_bytes = max(max_inflight_bytes, max_body_bytes)
        self.timeout = timeout
        self.inflight = 0

    def take(self, length: int | None, read_now: Callable[[], bytes]) -> bytes:
        """A body that has arrived whole, read by `read_now` without waiting: the checks and
        errors of `read`, which it would pass through without an await (nothing stays counted
        in flight, and no deadline is needed)."""
        if length is not None and length > self.max_body_bytes:
            raise BadReview(f"the request body is {length} bytes; the limit is {self.max_body_bytes} bytes")
        try:
            data = read_now()
        except (ConnectionError, TimeoutError) as exc:
            raise Aborted(type(exc).__name__) from None
        if self.inflight + len(data) > self.max_inflight_bytes:
            raise TooBusy()
        if len(data) > self.max_body_bytes:
            raise BadReview(f"the request body exceeds the limit of {self.max_body_bytes} bytes")
        return data

    async def read(self, length: int | None, read_chunk: Callable[[int], Awaitable[bytes]]) -> bytes:
        """The whole body, read CHUNK_BYTES at a time; `length` is the declared Content-Length."""
        if length is not None and length > self.max_body_bytes:
            raise BadReview(f"the request body is {length} bytes; the limit is {self.max_body_bytes} bytes")
        data = bytearray()
        counted = 0
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    chunk = await read_chunk(CHUNK_BYTES)
                    if not chunk:
                        return bytes(data)
                    if self.inflight + len(chunk) > self.max_inflight_bytes:
                        raise TooBusy()
                    self.inflight += len(chunk)
                    counted += len(chunk)
                    data += chunk
                    if len(data) > self.max_body_bytes:
                        raise BadReview(f"the request body exceeds the limit of {self.max_body_bytes} bytes")
        except (ConnectionError, TimeoutError) as exc:
            raise Aborted(type(exc).__name__) from None
        finally:
            self.inflight -= counted

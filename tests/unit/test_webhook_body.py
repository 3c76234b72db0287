"""BodyReader: a body read chunk by chunk (`read`) and one that has arrived whole (`take`) meet
the same limits with the same errors, and leave nothing counted in flight."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from kubetrain.webhook.body import Aborted, BodyReader, TooBusy
from kubetrain.webhook.review import BadReview


def chunks_of(data: bytes) -> Callable[[int], Awaitable[bytes]]:
    pos = 0

    async def read_chunk(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + n]
        pos += len(chunk)
        return chunk

    return read_chunk


async def both(reader: BodyReader, length: int | None, data: bytes) -> list[object]:
    """What `read` and `take` give for the same body: the bytes or the error (type, text)."""
    outcomes: list[object] = []
    before = reader.inflight
    for how in ("read", "take"):
        try:
            if how == "read":
                got: object = await reader.read(length, chunks_of(data))
            else:
                got = reader.take(length, lambda: data)
        except (BadReview, TooBusy, Aborted) as exc:
            got = (type(exc).__name__, str(exc))
        outcomes.append(got)
        assert reader.inflight == before
    return outcomes


@pytest.mark.parametrize(
    ("length", "size", "expected"),
    [
        (1000, 1000, b"x" * 1000),
        (None, 1000, b"x" * 1000),
        (0, 0, b""),
        (5000, 5000, ("BadReview", "the request body is 5000 bytes; the limit is 4096 bytes")),
        (None, 5000, ("BadReview", "the request body exceeds the limit of 4096 bytes")),
    ],
)
async def test_read_and_take_agree_on_limits(length: int | None, size: int, expected: object) -> None:
    reader = BodyReader(max_body_bytes=4096, max_inflight_bytes=1 << 20, timeout=5.0)
    assert await both(reader, length, b"x" * size) == [expected, expected]


async def test_a_whole_body_is_refused_when_bodies_in_flight_fill_the_budget() -> None:
    reader = BodyReader(max_body_bytes=4096, max_inflight_bytes=8192, timeout=5.0)
    reader.inflight = 8000  # other requests are reading bodies
    refused = ("TooBusy", "")
    assert await both(reader, 300, b"x" * 300) == [refused, refused]
    assert reader.take(100, lambda: b"x" * 100) == b"x" * 100
    assert reader.inflight == 8000


async def test_a_connection_lost_while_taking_the_body_is_aborted() -> None:
    reader = BodyReader(max_body_bytes=4096, max_inflight_bytes=4096, timeout=5.0)

    def lost() -> bytes:
        raise ConnectionResetError()

    with pytest.raises(Aborted, match="ConnectionResetError"):
        reader.take(None, lost)

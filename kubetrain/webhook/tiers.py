"""Where the webhook decides a review, by its body: on the event loop, in the thread pool, or in
a review process (kubetrain.webhook.processes, bodies over PROCESS_BYTES).

```python
decided_inline(body)    # True: decide on the event loop; False: hand it off
```

On the event loop a review holds everything else the process serves (/healthz, other reviews,
the controller and leader election, when they share the process) until it is decided; a
hand-off to a thread costs more CPU than an ordinary review and, under load, the threads and
the loop contend for the interpreter. So a review is decided inline when its cost is bounded
to milliseconds, and that cost follows the number of values to build and visit more than the
bytes: 64 KiB of lists nested 50 deep cost ~14 ms, 74 KB of 64 ordinary containers ~1 ms.
- up to INLINE_BYTES (64 KiB): always (the slowest such body found is the ~14 ms above);
- up to INLINE_MAX_BYTES (96 KiB) with at most INLINE_MAX_BRACKETS `{` and `[` bytes (each
  object or list has one; bytes in strings count too, which only sends more bodies off the
  loop): a few milliseconds (a container of 7,000 unknown fields, the slowest measured);
- anything else: off the loop.
Measured figures: docs/performance.md, "Big reviews fast again" (bench_webhook_inline.py).
"""

from __future__ import annotations

INLINE_BYTES = 64 * 1024
INLINE_MAX_BYTES = 96 * 1024
INLINE_MAX_BRACKETS = 4096


def decided_inline(body: bytes, marks: bytes | None = None) -> bool:
    """Whether a review with this body is decided on the event loop (see the module text).
    `marks`: kubetrain.webhook.shapebound.structure_marks(body), when the caller has it (the
    shape proof reads the same bytes): its `{` are the body's `{` and `[`."""
    if len(body) <= INLINE_BYTES:
        return True
    if len(body) > INLINE_MAX_BYTES:
        return False
    if marks is not None:
        return marks.count(b"{") <= INLINE_MAX_BRACKETS
    return body.count(b"{") + body.count(b"[") <= INLINE_MAX_BRACKETS

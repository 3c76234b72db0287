"""Deciding a review on the event loop without the garbage collections its own objects trigger.

```python
review, answer, result = decided_without_collections(lambda: decider.answer(body, "validate"))
# review: the request's header only (no object, oldObject or raw request) when answer is set
```

A decoded review is a tree of dicts and lists (a 74 KB one: ~5,000 of them), free of
reference cycles, alive only while it is decided and freed by reference counting when the
handler drops it. Yet the collector counts each one made: every 700 it runs a young
collection that traverses the ones still alive, moves them to the next generation (whose
collections traverse them again), and calls its `gc.callbacks` (the pause metric, the freeze
policy) before and after; a collection in the oldest generation while a review is alive even
freezes its objects (kubetrain.serving.gcfreeze). All of that proves again that the review is
reachable, which it is, and frees nothing.

So a review decided inline — synchronous from the decode to the encoded answer, nothing else
runs on the loop meanwhile — is decided with the collector paused (`gc.disable()`), and its
objects are freed before the collector resumes: the answer comes back with the review's header
only (what the handler's metrics and log lines read), so the decoded objects go at once. Each
object freed takes one off the count of allocations that triggers the next young collection
(CPython's `PyObject_GC_Del`), so after the review the count is where it was before it, and the
review has caused no collection. A review whose answer is still empty (a scale or TrainJob
review, whose job or runtime must be read first) keeps its objects: the handler needs them
after the read; its objects were made under the pause and are counted as usual from then on.

Limits: the pause is process-wide, so for the few milliseconds of one inline review no thread
of the process collects (their objects are collected at the next collection after it); any
reference cycle the decision makes waits for that collection too. The pause is not taken when
the collector is already disabled, and nothing else in kubetrain turns it off or on.
Measured figures: docs/performance.md, "The xlarge review: collections and shared templates"
(2026-11-27).
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable

from kubetrain.webhook.review import AdmissionRequest

Answer = tuple[AdmissionRequest, bytes, str]


def header_only(review: AdmissionRequest) -> AdmissionRequest:
    """The review without its objects and raw request: what logs, metrics and the caller of a
    decided review read (a review process sends back the same)."""
    return dataclasses.replace(review, object=None, old_object=None, raw={})


def decided_without_collections(decide: Callable[[], Answer]) -> Answer:
    """`decide()` with the garbage collector paused; an answered review comes back as its
    `header_only`, its decoded objects freed before the collector resumes."""
    if not gc.isenabled():
        return decide()
    gc.disable()
    try:
        review, answer, result = decide()
        if answer:
            review = header_only(review)  # the last reference to the decoded objects goes here
        return review, answer, result
    finally:
        gc.enable()

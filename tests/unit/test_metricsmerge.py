"""kubetrain.serving.merge: the children's counters and histograms added to the parent's."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubetrain.serving.merge import MergedRegistry


def registry() -> tuple[CollectorRegistry, Counter, Histogram, Gauge]:
    r = CollectorRegistry()
    c = Counter("reviews", "reviews", ["webhook"], registry=r)
    h = Histogram("review_seconds", "latency", ["webhook"], buckets=(0.1, 1.0), registry=r)
    g = Gauge("depth", "queue depth", registry=r)
    return r, c, h, g


def values(text: bytes | str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    raw = text.decode() if isinstance(text, bytes) else text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(raw)
        for s in f.samples
        if not s.name.endswith("_created")
    }


def test_counters_and_histograms_add_gauges_stay_the_parents() -> None:
    parent, pc, ph, pg = registry()
    child, cc, ch, cg = registry()
    pc.labels("validate").inc(2)
    ph.labels("validate").observe(0.05)
    pg.set(3)
    cc.labels("validate").inc(5)
    cc.labels("mutate").inc(1)  # a label set only the child has
    ch.labels("validate").observe(0.5)
    cg.set(100)
    merged = values(generate_latest(MergedRegistry(parent, [generate_latest(child).decode()] * 2)))
    assert merged[("reviews_total", (("webhook", "validate"),))] == 2 + 5 + 5
    assert merged[("reviews_total", (("webhook", "mutate"),))] == 2
    assert merged[("review_seconds_count", (("webhook", "validate"),))] == 3
    assert merged[("review_seconds_bucket", (("le", "0.1"), ("webhook", "validate")))] == 1
    assert merged[("review_seconds_bucket", (("le", "1.0"), ("webhook", "validate")))] == 3
    assert merged[("review_seconds_sum", (("webhook", "validate"),))] == 0.05 + 0.5 + 0.5
    assert merged[("depth", ())] == 3


def test_no_peers_or_garbage_changes_nothing() -> None:
    parent, pc, _, _ = registry()
    pc.labels("validate").inc()
    plain = values(generate_latest(parent))
    assert values(generate_latest(MergedRegistry(parent, []))) == plain
    assert values(generate_latest(MergedRegistry(parent, ["not { prometheus"]))) == plain

"""/metrics of several processes as one: the `--webhook-workers` children's counters and
histograms added to the parent's (docs/operations.md, "Metrics").

```python
registry = MergedRegistry(REGISTRY, [child_exposition_text, ...])
generate_latest(registry)      # the parent's families, each sample plus the children's
```

Only counters, histograms and summaries are added, sample by sample (same name and labels);
a label set only a child has is appended. Gauges (queue depths, per-process values), the
`process_*`/`python_*` collectors and `_created` timestamps stay the parent's own: adding them
up would be meaningless. A family no registry of the parent defines is ignored. Pure: the
texts are fetched by kubetrain.serving.health.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

ADDED_TYPES = ("counter", "histogram", "summary")
PER_PROCESS = ("process_", "python_")

SampleKey = tuple[str, tuple[tuple[str, str], ...]]


def peer_samples(texts: Iterable[str]) -> dict[str, dict[SampleKey, float]]:
    """family name -> (sample name, labels) -> the sum over `texts` (Prometheus text format);
    a text that does not parse is skipped whole."""
    out: dict[str, dict[SampleKey, float]] = {}
    for text in texts:
        try:
            families = list(text_string_to_metric_families(text))
        except ValueError:
            continue
        for family in families:
            if family.type not in ADDED_TYPES or family.name.startswith(PER_PROCESS):
                continue
            sums = out.setdefault(family.name, {})
            for s in family.samples:
                if s.name.endswith("_created"):
                    continue
                key = (s.name, tuple(sorted(s.labels.items())))
                sums[key] = sums.get(key, 0.0) + s.value
    return out


def merge_family(family: Metric, added: dict[SampleKey, float]) -> Metric:
    """`family` with `added` summed into its samples (new label sets appended)."""
    remaining = dict(added)
    samples: list[Sample] = []
    for s in family.samples:
        extra = remaining.pop((s.name, tuple(sorted(s.labels.items()))), 0.0)
        samples.append(s._replace(value=s.value + extra) if extra else s)
    for (name, labels), value in remaining.items():
        samples.append(Sample(name, dict(labels), value))
    merged = Metric(family.name, family.documentation, family.type, family.unit)
    merged.samples = samples
    return merged


class MergedRegistry(CollectorRegistry):
    """The families of `registry` with the peers' counters and histograms added."""

    def __init__(self, registry: CollectorRegistry, peer_texts: Iterable[str]) -> None:
        super().__init__(auto_describe=False)
        self.base = registry
        self.added = peer_samples(peer_texts)

    def collect(self) -> Iterator[Metric]:
        for family in self.base.collect():
            added = self.added.get(family.name)
            yield merge_family(family, added) if added and family.type in ADDED_TYPES else family

"""docs/operations.md's metrics tables against the metrics the operator registers.

What a user builds dashboards and alerts on: every row of a `| metric | type | labels | ... |`
table names metrics that exist in kubetrain.serving.metrics.REGISTRY (the registry `/metrics`
serves) with that type and exactly those label names, and every family kubetrain registers there
has a row. The registry is read after importing every kubetrain module, as the operator's
process does, so a metric declared anywhere is seen.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass

from docs_reading import Row, code_spans, tables
from prometheus_client import PLATFORM_COLLECTOR, PROCESS_COLLECTOR
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.registry import Collector

import kubetrain
from kubetrain.serving.metrics import REGISTRY

DOC = "docs/operations.md"


@dataclass(frozen=True)
class Family:
    name: str  # as exposed: a counter's with its `_total`
    type: str  # counter, gauge, histogram, unknown (exposed as `untyped`)
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Documented:
    row: Row
    names: list[str]  # as written: the first in full, the others maybe `_suffix` abbreviations
    types: list[str]
    labels: tuple[str, ...]


def _collectors() -> list[Collector]:
    for module in pkgutil.walk_packages(kubetrain.__path__, "kubetrain."):
        importlib.import_module(module.name)
    # prometheus_client has no public listing of a registry's collectors.
    return list(REGISTRY._collector_to_names)


def _exposed_name(name: str, type_: str) -> str:
    return f"{name}_total" if type_ == "counter" else name


def registered() -> dict[str, Family]:
    """Every family kubetrain registers, by exposed name (the standard process_/python_ ones aside)."""
    families: dict[str, Family] = {}
    for collector in _collectors():
        if collector is PROCESS_COLLECTOR or collector is PLATFORM_COLLECTOR:
            continue  # prometheus_client's own collectors, not kubetrain's series
        if isinstance(collector, MetricWrapperBase):
            name, type_, labels = collector._name, collector._type, tuple(collector._labelnames)
            families[_exposed_name(name, type_)] = Family(_exposed_name(name, type_), type_, labels)
            continue
        describe = getattr(collector, "describe", None)
        assert describe is not None, f"{collector!r} in REGISTRY has no describe(): its families are unknown"
        for metric in describe():
            labels = tuple(getattr(metric, "_labelnames", ()))
            name = _exposed_name(metric.name, metric.type)
            families[name] = Family(name, metric.type, labels)
    return families


_TYPE_WORDS = {"counter": "counter", "gauge": "gauge", "histogram": "histogram", "untyped": "unknown"}


def documented() -> list[Documented]:
    rows: list[Documented] = []
    for header, body in tables(DOC):
        if header[:3] != ("metric", "type", "labels"):
            continue
        for row in body:
            names = code_spans(row.cells["metric"])
            types = [re.sub(r"\(.*?\)", "", word).strip() for word in row.cells["type"].split("/")]
            labels = tuple(label.strip() for label in row.cells["labels"].split(",") if label.strip())
            rows.append(Documented(row, names, types, labels))
    return rows


def _candidates(first: str, suffix: str) -> list[str]:
    """What `_suffix` after `first` may stand for: `first` cut at one of its `_`, plus the suffix."""
    cuts = [i for i, char in enumerate(first) if char == "_"]
    return [first[:cut] + suffix for cut in cuts]


def _resolve(first: str, written: str, families: dict[str, Family]) -> tuple[str | None, list[str]]:
    if not written.startswith("_"):
        return (written if written in families else None), [written]
    candidates = _candidates(first, written)
    found = [name for name in candidates if name in families]
    return (found[0] if len(found) == 1 else None), candidates


def test_the_metrics_tables_exist() -> None:
    rows = documented()
    assert len(rows) >= 20, f"{DOC} has no `| metric | type | labels |` tables left to check"


def test_every_documented_metric_is_registered_with_its_type_and_labels() -> None:
    families = registered()
    problems: list[str] = []
    for doc in documented():
        where = doc.row.line.where()
        if not doc.names:
            problems.append(f"{where}: the metric cell names no `metric`")
            continue
        if len(doc.types) not in (1, len(doc.names)):
            problems.append(f"{where}: {len(doc.types)} types for {len(doc.names)} metrics")
            continue
        for index, written in enumerate(doc.names):
            name, candidates = _resolve(doc.names[0], written, families)
            if name is None:
                looked = ", ".join(candidates)
                problems.append(f"{where}: `{written}` is not registered (looked for {looked})")
                continue
            family = families[name]
            type_word = doc.types[index if len(doc.types) > 1 else 0]
            if _TYPE_WORDS.get(type_word) != family.type:
                problems.append(
                    f"{where}: `{name}` is documented as {type_word!r}, registered as {family.type!r}"
                )
            if doc.labels != family.labels:
                problems.append(
                    f"{where}: `{name}` is documented with labels {list(doc.labels)}, "
                    f"registered with {list(family.labels)}"
                )
    assert not problems, "\n".join(problems)


def test_every_registered_metric_is_documented() -> None:
    families = registered()
    seen: set[str] = set()
    for doc in documented():
        for written in doc.names:
            name, _ = _resolve(doc.names[0], written, families)
            if name is not None:
                seen.add(name)
    missing = sorted(set(families) - seen)
    assert not missing, (
        f"{DOC}: the metrics tables (| metric | type | labels | meaning |) have no row for "
        + ", ".join(f"`{name}`" for name in missing)
    )

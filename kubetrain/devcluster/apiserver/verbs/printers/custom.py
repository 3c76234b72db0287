"""Custom resources: NAME, the CRD version's additionalPrinterColumns and AGE, as
apiextensions-apiserver's table convertor (pkg/registry/customresource/tableconvertor) prints
them. A column's JSONPath may use fields, indexes, slices, `[*]` and `==`/`!=` filters; the first
match is the cell."""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime
from typing import Any

from kubetrain.devcluster.apiserver.base.types import Obj
from kubetrain.devcluster.apiserver.verbs.printers.common import NAME, age, col, human_duration

_SEGMENT = re.compile(
    r"([^.\[\]]+)"  # a field
    r"|\[\?\(@\.([\w.-]+)\s*(==|!=)\s*(?:\"([^\"]*)\"|'([^']*)'|([\w.+-]+))\)\]"  # [?(@.f=="v")]
    r"|\[(\*|-?\d*)(:?)(-?\d*)\]"  # [*], [n], [a:b]
)


def path(obj: Obj, jsonpath: str) -> Any:
    """Evaluate a CRD printer column's JSONPath (`.a.b`, `.a[0]`, `.a[-1:].b`, `.a[*].b`,
    `.a[?(@.status=="True")].type`) as kube-apiserver's table convertor does: of every match,
    the first is the cell (its `results[0][0]`); none is an empty cell."""
    values: list[Any] = [obj]
    for m in _SEGMENT.finditer(jsonpath.strip()):
        field, key, op, dquoted, squoted, bare, start, colon, stop = m.groups()
        nxt: list[Any] = []
        for cur in values:
            if field is not None:
                if isinstance(cur, dict) and field in cur:
                    nxt.append(cur[field])
            elif key is not None:
                if isinstance(cur, list):
                    wanted = dquoted if dquoted is not None else squoted if squoted is not None else bare
                    nxt.extend(x for x in cur if _matches(x, key, wanted, op == "=="))
            elif isinstance(cur, list):
                if start == "*":
                    nxt.extend(cur)
                elif colon:
                    nxt.extend(cur[slice(int(start) if start else None, int(stop) if stop else None)])
                elif start:
                    with contextlib.suppress(IndexError):
                        nxt.append(cur[int(start)])
        values = nxt
    return values[0] if values else None


def _matches(item: Any, field: str, wanted: str, equal: bool) -> bool:
    """A filter's test of one list item: its `field` (dotted) compared with `wanted` as text
    (a missing field matches neither == nor !=, as in client-go's jsonpath)."""
    value: Any = item
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    text = value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return (text == wanted) == equal


def columns_and_rows(
    printer_columns: list[Obj], items: list[Obj], now: datetime
) -> tuple[list[Obj], list[list[Any]]]:
    cols = [NAME] + [col(c["name"], c.get("type", "string"), c.get("priority", 0)) for c in printer_columns]
    rows = []
    for o in items:
        cells: list[Any] = [o["metadata"]["name"]]
        for c in printer_columns:
            value = path(o, c.get("jsonPath", ""))
            if c.get("type") == "date" and isinstance(value, str):
                with contextlib.suppress(ValueError):
                    when = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
                    value = human_duration((now - when).total_seconds())
            cells.append(value)
        rows.append(cells)
    if not any(c.get("jsonPath") == ".metadata.creationTimestamp" for c in printer_columns):
        cols.append(col("Age", "date"))
        for cells, o in zip(rows, items, strict=True):
            cells.append(age(o, now))
    return cols, rows

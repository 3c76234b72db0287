"""The chart values the docs name against charts/kubetrain/values.yaml.

A value is named, and must exist in values.yaml, where the doc's context says it is a value:

- a row of the chart README's `| value | default | meaning |` table (`a.b` / `c`: `c` is a.c);
- a `chart` column (docs/operations.md's flag table): a dotted name (not an API group), a
  `name: setting`, or the single name a cell starts with;
- `helm ... --set a.b=c` (`--set-string`, `--set-json`) in a shell line or code span;
- a dotted name in a code span whose first part is a top-level value (`webhook.timeoutSeconds`),
  unless it is an API group kubetrain serves (`trainer.kubeflow.org`) or a field path of a
  job's spec (a TrainJob's `trainer.env`) in the CRDs kubetrain ships.

And every value of values.yaml is in the chart README's table, so `helm show readme` documents
everything `helm show values` offers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from docs_reading import DOCS, ROOT, Block, Line, blocks, code_spans, tables

from kubetrain.api.groups import SERVABLE_GROUPS

CHART_README = "charts/kubetrain/README.md"
VALUES = yaml.safe_load((ROOT / "charts/kubetrain/values.yaml").read_text(encoding="utf-8"))
_NAME = r"[a-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*"
_VALUE = re.compile(rf"^({_NAME})(?=$|:\s|=)")
_DOTTED = re.compile(r"^([a-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)+)(?=$|:\s|=)")
_SET = re.compile(r"--set(?:-string|-json)?[ =]([^\s'\"]+|'[^']*'|\"[^\"]*\")")


def _lookup(path: str) -> bool:
    node: Any = VALUES
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def leaves(node: Any = VALUES, prefix: str = "") -> Iterator[str]:
    """Every value a user sets: the scalars and lists, and the maps that are empty by default."""
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from leaves(value, f"{path}.")
        else:
            yield path


def _crd_fields() -> set[str]:
    """Every field path under `spec` of the CRDs kubetrain ships."""
    fields: set[str] = set()

    def walk(schema: dict[str, Any], prefix: str) -> None:
        for name, sub in schema.get("properties", {}).items():
            fields.add(f"{prefix}{name}")
            walk(sub, f"{prefix}{name}.")
        if "items" in schema:
            walk(schema["items"], prefix)

    for path in [*ROOT.glob("crds/*.yaml"), *ROOT.glob("charts/kubetrain/files/crds/*.yaml")]:
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            for version in crd["spec"]["versions"]:
                spec = version["schema"]["openAPIV3Schema"]["properties"].get("spec", {})
                walk(spec, "")
    return fields


def _table_names(line: Line, cell: str) -> Iterator[tuple[Line, str]]:
    """A value table's first cell: the first name in full, the next ones maybe its siblings."""
    names = [span for span in code_spans(cell) if _VALUE.match(span)]
    for index, name in enumerate(names):
        sibling = names[0].rsplit(".", 1)[0] + "." + name
        if index and "." in names[0] and (_lookup(sibling) or not _lookup(name)):
            name = sibling
        yield line, name


def _chart_cell_names(line: Line, cell: str) -> Iterator[tuple[Line, str]]:
    for match in re.finditer(r"(`+)(.+?)\1", cell):
        span = match.group(2).strip()
        value = _VALUE.match(span)
        if value is None or value.group(1) in SERVABLE_GROUPS:
            continue
        first_in_cell = match.start() == 0 and not cell[match.end() :].lstrip().startswith(":")
        if "." in value.group(1) or span != value.group(1) or first_in_cell:
            yield line, value.group(1)


def _set_keys(text: str) -> Iterator[str]:
    for match in _SET.finditer(text):
        for pair in re.split(r",(?![^{]*})", match.group(1).strip("'\"")):
            key = pair.split("=", 1)[0]
            yield re.sub(r"\[\d+\]", "", key).replace("\\.", ".")


def named_values() -> list[tuple[Line, str]]:
    groups, fields = set(SERVABLE_GROUPS), _crd_fields()
    found: list[tuple[Line, str]] = []
    for doc in (*DOCS, CHART_README):
        for header, rows in tables(doc):
            for row in rows:
                if header[:1] == ("value",):
                    found += _table_names(row.line, row.cells["value"])
                if "chart" in header:
                    found += _chart_cell_names(row.line, row.cells["chart"])
        for block in blocks(doc):
            found += _named_in_block(block, groups, fields)
    return found


def _named_in_block(block: Block, groups: set[str], fields: set[str]) -> Iterator[tuple[Line, str]]:
    if block.language is not None:
        for key in _set_keys(block.text):
            yield block.first, key
        return
    for match in re.finditer(r"(`+)(.+?)\1", block.text):
        span = match.group(2).strip()
        line = block.line_at(match.start())
        if span.startswith("helm "):
            for key in _set_keys(span):
                yield line, key
            continue
        dotted = _DOTTED.match(span)
        if dotted is None:
            continue
        name = dotted.group(1)
        if name.split(".")[0] in VALUES and name not in groups and name not in fields:
            yield line, name


def test_the_docs_name_chart_values() -> None:
    named = named_values()
    assert len({name for _, name in named}) >= 60


def test_every_chart_value_the_docs_name_exists() -> None:
    problems = [
        f"{line.where()}: chart value `{name}` is not in charts/kubetrain/values.yaml"
        for line, name in named_values()
        if not _lookup(name)
    ]
    assert not problems, "\n".join(problems)


def test_every_chart_value_is_in_the_chart_readme() -> None:
    documented: set[str] = set()
    for header, rows in tables(CHART_README):
        if header[:1] == ("value",):
            for row in rows:
                documented.update(name for _, name in _table_names(row.line, row.cells["value"]))
    missing = [
        path
        for path in leaves()
        if not any(path == name or path.startswith(f"{name}.") for name in documented)
    ]
    assert not missing, f"{CHART_README}: the `| value |` table has no row for " + ", ".join(
        f"`{path}`" for path in missing
    )

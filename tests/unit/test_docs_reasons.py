"""docs/behaviour.md §5's reason table against kubetrain.frameworks.jobreasons, the table the
operator writes conditions and Events with.

Each row names kubetrain's reasons (first column) and how each API group writes them: a v1 kind
of kubeflow.org (`<Kind>` stands for every one, an MPIJob created at kubeflow.org/v1 included),
an MPIJob written as mpi-operator's, and kubetrain.io / training.kubedl.io. `kept` means the
reason is written unchanged; "every other reason above" stands for the other reasons of the
paragraph above the table. A user's alert or tool matching on these strings relies on them.

And every reason the code names is in the docs, and every reason §5 lists is one the code names.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

from docs_reading import Row, all_lines, blocks, code_spans, tables

import kubetrain
from kubetrain.frameworks.jobreasons import reason_names
from kubetrain.frameworks.mpilabels import ANNOTATION_CREATED_API_VERSION, TRAINING_OPERATOR_VERSION
from kubetrain.frameworks.registry import FRAMEWORKS

DOC = "docs/behaviour.md"
_REASON = re.compile(r"^[A-Z][A-Za-z]+$")
_CONSTANT = re.compile(r"(\w+_)?REASONS?(_\w+)?")


def _job(api_version: str, kind: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "n", "namespace": "ns", "annotations": annotations or {}},
        "spec": {},
    }


def _column_jobs() -> list[list[tuple[str, dict[str, Any]]]]:
    """Per table column after the first: (the kind `<Kind>` stands for, a job of that column)."""
    v1 = [(kind, _job("kubeflow.org/v1", kind)) for kind in FRAMEWORKS if kind != "MPIJob"]
    v1.append(
        (
            "MPIJob",
            _job("kubeflow.org/v1", "MPIJob", {ANNOTATION_CREATED_API_VERSION: TRAINING_OPERATOR_VERSION}),
        )
    )
    mpi = [("MPIJob", _job("kubeflow.org/v2beta1", "MPIJob"))]
    own = [(kind, _job("kubetrain.io/v1", kind)) for kind in FRAMEWORKS]
    own += [("PyTorchJob", _job("training.kubedl.io/v1alpha1", "PyTorchJob"))]
    return [v1, mpi, own]


def _reason_table() -> tuple[list[Row], list[str]]:
    """The table's rows, and the reasons named in the paragraph just above it."""
    for header, rows in tables(DOC):
        if header[:1] == ("kubetrain's",):
            first = rows[0].line.number - 2
            above = [b for b in blocks(DOC) if b.lines[-1].number < first and b.language is None]
            paragraph = above[-1].text
            reasons = paragraph.split("Reasons:", 1)[-1]
            return rows, [span for span in code_spans(reasons) if _REASON.match(span)]
    raise AssertionError(f"{DOC}: no table whose first column is `kubetrain's` (§5, the reason table)")


def _written_in_cell(cell: str, reasons: list[str]) -> list[str] | None:
    """What the cell says each of `reasons` is written as (`<Kind>` unresolved); None: not a claim."""
    if cell.startswith("kept"):
        return reasons
    names = [span for span in code_spans(cell.split("(", 1)[0]) if _REASON.match(span.replace("<Kind>", "K"))]
    if len(names) == len(reasons):
        return names
    if len(names) == 1:
        return names * len(reasons)
    return None


def test_the_reason_table_is_what_each_group_writes() -> None:
    rows, above = _reason_table()
    named_in_rows = {span for row in rows for span in code_spans(next(iter(row.cells.values())))}
    problems: list[str] = []
    for row in rows:
        cells = list(row.cells.values())
        reasons = [span for span in code_spans(cells[0]) if _REASON.match(span)]
        if not reasons and "every other reason" in cells[0]:
            reasons = [reason for reason in above if reason not in named_in_rows]
        if not reasons:
            problems.append(f"{row.line.where()}: the row names no reason")
            continue
        for cell, jobs in zip(cells[1:], _column_jobs(), strict=True):
            written = _written_in_cell(cell, reasons)
            if written is None:
                problems.append(f"{row.line.where()}: cannot read {cell!r} as one reason per {reasons}")
                continue
            for reason, expected in zip(reasons, written, strict=True):
                for kind, job in jobs:
                    actual = reason_names(job).written(reason)
                    if actual != expected.replace("<Kind>", kind):
                        problems.append(
                            f"{row.line.where()}: {reason} of a {job['apiVersion']} {kind} is written "
                            f"{actual!r}, the table says {expected!r}"
                        )
    assert not problems, "\n".join(problems)


def reason_constants() -> dict[str, str]:
    """Every reason the operator names in code: module-level strings called `REASON…`/`…_REASON…`,
    by value (with one module defining it). devcluster's are kube-apiserver's and the kubelet's."""
    found: dict[str, str] = {}
    for module in pkgutil.walk_packages(kubetrain.__path__, "kubetrain."):
        if module.name.startswith("kubetrain.devcluster"):
            continue
        for name, value in vars(importlib.import_module(module.name)).items():
            if _CONSTANT.fullmatch(name) and isinstance(value, str):
                found.setdefault(value, f"{module.name}.{name}")
    return found


def _outside_parentheses(text: str) -> str:
    while True:
        stripped = re.sub(r"\([^()]*\)", "", text)
        if stripped == text:
            return text
        text = stripped


def test_every_reason_in_code_is_documented() -> None:
    spans = {span for line in all_lines() for span in code_spans(line.text)}
    missing = [
        f"{value} ({where})" for value, where in sorted(reason_constants().items()) if value not in spans
    ]
    assert not missing, "no `code span` in README.md or docs/*.md names the reasons " + ", ".join(missing)


def test_every_reason_section_5_lists_is_one_the_code_has() -> None:
    known = reason_constants()
    rows, _ = _reason_table()
    paragraph = next(
        b for b in blocks(DOC) if "Reasons:" in b.text and b.lines[-1].number < rows[0].line.number
    )
    listed = _outside_parentheses(paragraph.text.split("Reasons:", 1)[1])
    unknown = [span for span in code_spans(listed) if _REASON.match(span) and span not in known]
    assert not unknown, f"{paragraph.first.where()}: §5 lists reasons no code names: {unknown}"

"""A batch Job's `successPolicy` (batch/v1 `SuccessPolicy`): its rules read, checked and matched
as kube-apiserver and the Job controller do. Pure.

A rule names `succeededIndexes` ("0-3,5": ordered, non-overlapping intervals of completion
indexes), `succeededCount`, or both. It matches (`success_policy.go`, `matchSuccessPolicy` and
`matchSucceededIndexesRule`), given at least one succeeded index: with indexes only, when every
named index succeeded; with both, when at least `succeededCount` of the named indexes did; with
a count only, when at least `succeededCount` indexes did. At run time indexes are read as
`parseIndexesFromString` reads them (`run_indexes`: past the Job's completions ignored) and a
rule left without an index is skipped.
The first rule that matches makes the Job succeed: condition SuccessCriteriaMet then Complete,
reason `SuccessPolicy`, message "Matched rules at index <i>"; its other pods are terminated.

Admission (`pkg/apis/batch/validation`, `validateSuccessPolicy`, `validateSuccessPolicyRule`,
`validateIndexesFormat`): completionMode Indexed, 1 to 20 rules, each with at least one of the
two fields; `succeededIndexes` at most 64 KiB, each index a decimal below `completions`, in
increasing order; `succeededCount` ≥ 0, ≤ `completions` and ≤ the number of indexes named.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kubetrain.api.errors import QUOTE, FieldError, invalid, required

FIELD = "successPolicy"  # batch/v1 JobSpec's (not a framework's field of the same name)
REASON = "SuccessPolicy"  # batch/v1 JobReasonSuccessPolicy
MESSAGE = "Matched rules at index"  # matchSuccessPolicy's message, then the rule's index
MAX_RULES = 20  # maxSuccessPolicyRule
MAX_INDEXES_LENGTH = 64 * 1024  # maxJobSuccessPolicySucceededIndexesLimit
INDEXED = "Indexed"
ATOI = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi takes


@dataclass(frozen=True)
class SuccessRule:
    """One rule: `indexes` as written ("" when unset), `count` (None when unset)."""

    indexes: str | None = None
    count: int | None = None


def rules_of(job_spec: Mapping[str, Any]) -> tuple[SuccessRule, ...]:
    """The rules of a Job spec's `successPolicy` (none when absent or malformed: admission
    refuses those, `validate`)."""
    policy = job_spec.get(FIELD)
    rules = policy.get("rules") if isinstance(policy, Mapping) else None
    out: list[SuccessRule] = []
    for rule in rules if isinstance(rules, list) else ():
        if not isinstance(rule, Mapping):
            continue
        indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
        out.append(
            SuccessRule(
                indexes if isinstance(indexes, str) else None,
                count if type(count) is int else None,
            )
        )
    return tuple(out)


def parse_indexes(text: str, completions: int) -> tuple[frozenset[int], str | None]:
    """The indexes `text` names and its first problem (None when well formed), as
    `validateIndexesFormat` reads it: intervals `a` or `a-b` split by ",", increasing, each
    index below `completions`."""
    found: set[int] = set()
    if not text:
        return frozenset(), None
    last: int | None = None
    for interval in text.split(","):
        limits = interval.split("-")
        if len(limits) > 2:
            return frozenset(found), (
                f"the fragment {QUOTE.encode(interval)} violates the requirement that an index interval can "
                "have "
                "at most two parts separated by '-'"
            )
        bounds: list[int] = []
        for limit in limits:
            if not (limit.isascii() and limit.isdigit()):
                return frozenset(found), f"cannot convert string to integer for index: {QUOTE.encode(limit)}"
            x = int(limit)
            if x >= completions:
                return frozenset(found), f"too large index: {QUOTE.encode(limit)}"
            if last is not None and last >= x:
                return frozenset(found), f"non-increasing order, previous: {last}, current: {x}"
            last = x
            bounds.append(x)
        found.update(range(bounds[0], bounds[-1] + 1))
    return frozenset(found), None


def run_indexes(text: str, completions: int) -> frozenset[int]:
    """The indexes a rule names at run time, as `parseIndexesFromString` reads them: an
    interval that is no integer is skipped, one starting at or past `completions` ends the list,
    one ending past it is cut at `completions - 1`."""
    found: set[int] = set()
    for interval in text.split(",") if text else ():
        limits = interval.split("-")
        if not ATOI.fullmatch(limits[0]):
            continue
        first = int(limits[0])
        if first >= completions:
            break
        if len(limits) > 1 and not ATOI.fullmatch(limits[1]):
            continue
        last = min(int(limits[1]), completions - 1) if len(limits) > 1 else first
        found.update(range(max(first, 0), last + 1))
    return frozenset(found)


def matched_rule(rules: tuple[SuccessRule, ...], completions: int, succeeded: Collection[int]) -> int | None:
    """The index of the first rule the Job's `succeeded` indexes match, or None."""
    done = {i for i in succeeded if 0 <= i < completions}
    if not done:
        return None
    for n, rule in enumerate(rules):
        if rule.indexes is not None:
            wanted = run_indexes(rule.indexes, completions)
            if not wanted:
                continue
            hit = len(wanted & done)
            if (rule.count is None and hit == len(wanted)) or (rule.count is not None and hit >= rule.count):
                return n
        elif rule.count is not None and len(done) >= rule.count:
            return n
    return None


def message(rule: int) -> str:
    return f"{MESSAGE} {rule}"


def validate(job_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """Every problem of a Job spec's `successPolicy`; `path`: the Job spec's. The Job's
    completions are its template's `completions` when set (unset: the range checks wait for the
    run, where an index past them is ignored)."""
    policy = job_spec.get(FIELD)
    if policy is None:
        return []
    base = f"{path}.{FIELD}"
    if not isinstance(policy, Mapping):
        return [invalid(base, "must be an object with a list of rules")]
    errors: list[FieldError] = []
    mode = job_spec.get("completionMode")
    if mode is not None and mode != INDEXED:  # unset: JobSet's default, Indexed
        errors.append(
            invalid(f"{path}.completionMode", f"{QUOTE.encode(mode)}: requires completionMode: {INDEXED}")
        )
    rules = policy.get("rules")
    if not isinstance(rules, list) or not rules:
        errors.append(
            required(
                f"{base}.rules", "at least one rules must be specified when the successPolicy is specified"
            )
        )
        return errors
    if len(rules) > MAX_RULES:
        errors.append(invalid(f"{base}.rules", f"must have at most {MAX_RULES} items, got {len(rules)}"))
    completions = job_spec.get("completions")
    for j, rule in enumerate(rules):
        errors += _rule_errors(rule, f"{base}.rules[{j}]", completions if type(completions) is int else None)
    return errors


def _rule_errors(rule: object, path: str, completions: int | None) -> list[FieldError]:
    if not isinstance(rule, Mapping):
        return [invalid(path, "must be an object with succeededIndexes and/or succeededCount")]
    indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
    if indexes is None and count is None:
        return [required(path, "at least one of succeededCount or succeededIndexes must be specified")]
    errors: list[FieldError] = []
    named: int | None = None
    if indexes is not None:
        ipath = f"{path}.succeededIndexes"
        if not isinstance(indexes, str):
            errors.append(
                invalid(ipath, f'{QUOTE.encode(indexes)}: must be a string of indexes such as "0-3,5"')
            )
        elif len(indexes) > MAX_INDEXES_LENGTH:
            errors.append(invalid(ipath, f"must have at most {MAX_INDEXES_LENGTH} bytes, got {len(indexes)}"))
        else:
            found, problem = parse_indexes(indexes, completions if completions is not None else 2**31)
            if problem is not None:
                errors.append(
                    invalid(ipath, f"{QUOTE.encode(indexes)}: error parsing succeededIndexes: {problem}")
                )
            else:
                named = len(found)
    if count is not None:
        cpath = f"{path}.succeededCount"
        if type(count) is not int or count < 0:
            return [
                *errors,
                invalid(cpath, f"{QUOTE.encode(count)}: must be an integer greater than or equal to 0"),
            ]
        if completions is not None and count > completions:
            errors.append(
                invalid(
                    cpath,
                    f"{count}: must be less than or equal to {completions} "
                    "(the number of specified completions)",
                )
            )
        if named is not None and count > named:
            errors.append(
                invalid(
                    cpath,
                    f"{count}: must be less than or equal to {named} "
                    "(the number of indexes in the specified succeededIndexes field)",
                )
            )
    return errors

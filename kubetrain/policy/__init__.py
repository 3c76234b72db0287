"""Platform policy (TrainingPolicy, docs/behaviour.md §9): pure evaluation, no I/O.

The interface the webhook and `kubetrain validate --policy` use:

- `PolicyIndex` (cache.py): policies + namespace labels fed by informer callbacks;
  `for_job(kind, namespace)` -> the matching valid policies in name order.
- `matching_policies(policies, kind, namespace_labels)` (matching.py), for offline use.
- `apply_policy_defaults(job, policies, user_job=...) -> PolicyDefaulted(obj, applied)`
  (defaults.py): mutating step, after the built-in defaults.
- `check_policy_limits(job, policies, gang_scheduling=...) -> PolicyVerdict(denials, warnings)`
  (limits.py): validating step; lines read `policy "<name>": <field path>: <limit>`.
- `validate_policy(obj) -> list[FieldError]`, `parse_policy(obj)` (validate_policy.py):
  TrainingPolicy objects themselves.
- `policy_status(obj, errors, now)` (status.py): the status to write on a TrainingPolicy.
"""

from kubetrain.policy.cache import PolicyIndex
from kubetrain.policy.defaults import PolicyDefaulted, apply_policy_defaults
from kubetrain.policy.limits import PolicyVerdict, check_policy_limits
from kubetrain.policy.matching import matching_policies, selector_matches
from kubetrain.policy.status import policy_status
from kubetrain.policy.validate_policy import InvalidPolicyError, parse_policy, validate_policy

__all__ = [
    "InvalidPolicyError",
    "PolicyDefaulted",
    "PolicyIndex",
    "PolicyVerdict",
    "apply_policy_defaults",
    "check_policy_limits",
    "matching_policies",
    "parse_policy",
    "policy_status",
    "selector_matches",
    "validate_policy",
]

"""The flags of `kubetrain dev` that say how long its emulated API server keeps what it stores,
each as the kube-apiserver flag it stands for: `--watch-window` (the watch history's count cap,
as the watch cache's capacity), `--event-ttl` (`--event-ttl`) and `--compaction-interval`
(`--etcd-compaction-interval`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kubetrain.api.errors import QUOTE
from kubetrain.devcluster.apiserver.storage.compaction import DEFAULT_COMPACTION_INTERVAL, check_interval
from kubetrain.devcluster.apiserver.storage.eventttl import DEFAULT_EVENT_TTL, check_ttl


def add_history_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--watch-window",
        type=int,
        default=1000,
        help="with --cluster-only: events kept in the history; a watch, Exact list or continue "
        "token at an older resourceVersion gets 410 Gone (default 1000)",
    )
    parser.add_argument(
        "--event-ttl",
        type=event_ttl_arg,
        default=DEFAULT_EVENT_TTL,
        metavar="SECONDS",
        help="devcluster deletes each Event this long after its last write, as kube-apiserver's "
        f"--event-ttl (default {DEFAULT_EVENT_TTL:g}: one hour; 0: keep Events forever)",
    )
    parser.add_argument(
        "--compaction-interval",
        type=compaction_interval_arg,
        default=DEFAULT_COMPACTION_INTERVAL,
        metavar="SECONDS",
        help="devcluster compacts its history this often to the resourceVersion of one interval "
        "earlier, as kube-apiserver's --etcd-compaction-interval: older watches and continue tokens "
        f"get 410 Gone (default {DEFAULT_COMPACTION_INTERVAL:g}: five minutes; 0: never by time)",
    )


def _seconds(check: Callable[[float], float], zero: str) -> Callable[[str], float]:
    """An argparse type for a number of seconds that `check` accepts; `zero` says what 0 means."""

    def convert(value: str) -> float:
        try:
            return check(float(value))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid value {QUOTE.encode(value)}: seconds, 0 ({zero}) or a positive number"
            ) from None

    return convert


compaction_interval_arg = _seconds(check_interval, "never compact by time")
event_ttl_arg = _seconds(check_ttl, "Events never expire")

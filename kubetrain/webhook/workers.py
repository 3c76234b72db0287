"""Extra webhook processes sharing the webhook port (`--webhook-workers N`).

Python runs one review at a time per process (the GIL), so one process uses one CPU however
many threads it has. With `--webhook-workers N` the process that owns the webhook (`kubetrain run`
or `kubetrain webhook`) binds its port with SO_REUSEPORT and starts N-1 children running
`kubetrain webhook` on the same address and port; the kernel spreads new connections across the
N listening sockets.

```python
workers = WebhookWorkers(args, count=2)   # args: the parent's parsed flags
await workers.start()                     # the children; restarted if one exits
...
await workers.stop()                      # SIGTERM, then SIGKILL after `grace` seconds
```

The children are kept by kubetrain.serving.children (restarted when one exits). A child reads
the serving certificate from the same `--cert-dir` (in self-managed mode the
parent writes it there; every process polls the directory), keeps its own TrainingPolicy and
Namespace watches, and serves its /healthz, /readyz and /metrics on a loopback port of its own
and on a Unix socket in a private directory of the parent (`metrics_sockets`): the parent's
/metrics adds the children's counters and histograms to its own (kubetrain.serving.merge), so one
scrape sees every process's reviews.
"""

from __future__ import annotations

import argparse
import sys

from kubetrain.serving.children import ChildProcesses


def child_argv(args: argparse.Namespace) -> list[str]:
    """The `kubetrain webhook` command line of one child process, from the parent's flags."""
    argv = [
        "webhook",
        "--webhook-reuse-port",
        "--webhook-workers=1",
        f"--webhook-host={args.webhook_host}",
        f"--webhook-port={args.webhook_port}",
        f"--webhook-max-request-bytes={args.webhook_max_request_bytes}",
        f"--webhook-review-processes={args.webhook_review_processes}",
        f"--webhook-review-time-limit={args.webhook_review_time_limit}",
        "--cert-mode=directory",
        f"--cert-dir={args.cert_dir}",
        f"--gang-scheduler={args.gang_scheduler}",
        f"--max-replicas-per-job={args.max_replicas_per_job}",
        # The parent's domain, empty when not set: the child then reads no $CUSTOM_CLUSTER_DOMAIN
        # the parent's flag overrode.
        f"--cluster-domain={args.cluster_domain.configured}",
        "--metrics-bind-address=127.0.0.1",
        "--metrics-port=0",
        f"--log-level={args.log_level}",
        "--training-policies" if args.training_policies else "--no-training-policies",
    ]
    if args.kubeconfig:
        argv.append(f"--kubeconfig={args.kubeconfig}")
    return argv


class WebhookWorkers(ChildProcesses):
    def __init__(self, args: argparse.Namespace, count: int, *, grace: float = 10.0) -> None:
        argv = [sys.executable, "-m", "kubetrain.cli", *child_argv(args)]
        super().__init__(argv, count, name="webhook worker", grace=grace)

"""What `kubetrain controller`, `webhook` and `run` share as long-running processes: stopping on
SIGTERM/SIGINT and turning start-up failures into one logged line and an exit code (2: a flag
combination that cannot work, 1: a resource that cannot be had — a port, the kubeconfig, the
API server) instead of tracebacks."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from kubetrain.commands._flags import configure_logging
from kubetrain.kube.errors import ApiError, ApiUnreachable, KubeconfigError
from kubetrain.operator.apigroups import ApiGroupRefused
from kubetrain.serving import gcfreeze
from kubetrain.serving.gcpause import install_gc_pause_metric

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class ConfigError(Exception):
    """A flag combination that cannot work; the message says which flag to set."""


def install_stop_signals(stop: asyncio.Event) -> None:
    """Set `stop` on SIGTERM or SIGINT (where the loop supports signal handlers)."""
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """`install_stop_signals` for the duration of the block; the handlers are removed after."""
    install_stop_signals(stop)
    try:
        yield
    finally:
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


def configure_gc() -> None:
    """Time every garbage collection (`kubetrain_gc_pause_seconds`) and install the freeze
    policy `KUBETRAIN_GC_FREEZE` asks for (kubetrain.serving.gcfreeze); a bad value raises
    ConfigError naming the variable."""
    install_gc_pause_metric()
    try:
        gcfreeze.configure(os.environ)
    except gcfreeze.GcConfigError as exc:
        raise ConfigError(str(exc)) from None


def run_service(
    args: argparse.Namespace,
    serve: Callable[[argparse.Namespace], Coroutine[Any, Any, None]],
    log: logging.Logger,
    what: str,
) -> int:
    """Run `serve(args)` to the end; the exit code of the process. `what` names the service in
    the start-up error ("cannot start the webhook: …")."""
    configure_logging(args)
    try:
        configure_gc()
        asyncio.run(serve(args))
    except (ConfigError, ApiGroupRefused) as exc:
        log.error("%s", exc)
        return 2
    except KubeconfigError as exc:
        hint = " (give --kubeconfig a kubeconfig file, or set $KUBECONFIG)" if exc.other_file else ""
        log.error("cannot start %s: %s%s", what, exc, hint)
        return 1
    except ApiUnreachable as exc:
        log.error("cannot start %s: %s", what, exc)
        return 1
    except ApiError as exc:  # a start-up read the API server refused (e.g. RBAC)
        log.error("cannot start %s: the API server answered %s", what, exc)
        return 1
    except OSError as exc:  # e.g. the port is taken
        log.error("cannot start %s: %s", what, exc)
        return 1
    return 0

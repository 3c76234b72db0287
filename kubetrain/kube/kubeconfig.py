"""Finding and reading the kubeconfig, with errors that say what to fix.

    path = default_kubeconfig_path()                  # $KUBECONFIG (first file), else ~/.kube/config
    await load_kubeconfig(path, context, configuration)   # KubeconfigError: one line, no traceback
    load_in_cluster(configuration)                    # the pod's service account

kubernetes-asyncio reads the file; left alone it answers a missing file with "Expected key
current-context" and a malformed one with a TypeError from deep inside. The file is therefore
checked first (exists, readable, a YAML mapping) and whatever kubernetes-asyncio raises while
loading becomes a `KubeconfigError` naming the file.
"""

from __future__ import annotations

import os
from typing import Any

import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import Configuration

from kubetrain.api.manifests import yaml_problem
from kubetrain.kube.errors import KubeconfigError


def default_kubeconfig_path() -> str:
    """$KUBECONFIG (the first file of a list), else ~/.kube/config."""
    env = os.environ.get("KUBECONFIG", "")
    first = env.split(os.pathsep)[0] if env else ""
    return first or os.path.expanduser("~/.kube/config")


def _error(path: str, problem: str) -> KubeconfigError:
    return KubeconfigError(f"kubeconfig {path}: {problem}")


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise _error(path, "no such file") from None
    except IsADirectoryError:
        raise _error(path, "is a directory, not a kubeconfig file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _error(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _error(path, f"not valid YAML: {yaml_problem(exc)}") from None
    if not isinstance(doc, dict):
        raise _error(path, "not a kubeconfig (a YAML mapping with clusters, contexts and users)")
    return doc


async def load_kubeconfig(path: str, context: str | None, configuration: Configuration) -> None:
    """Fill `configuration` from the kubeconfig at `path` (its current context, or `context`)."""
    doc = _read(path)
    if context is None and not doc.get("current-context"):
        raise KubeconfigError(
            f"kubeconfig {path}: sets no current-context (set one with `kubectl config use-context NAME`)",
            other_file=False,
        )
    try:
        await kube_config.load_kube_config(
            config_file=path, context=context, client_configuration=configuration, persist_config=False
        )
    except KubeconfigError:
        raise
    except Exception as exc:  # ConfigException, and TypeError/KeyError/ValueError of a malformed file
        raise _error(path, f"not a usable kubeconfig: {exc or type(exc).__name__}") from None


def load_in_cluster(configuration: Configuration) -> None:
    """Fill `configuration` from the pod's service account (token, CA, $KUBERNETES_SERVICE_HOST)."""
    try:
        kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except Exception as exc:  # ConfigException: no token or CA file, no service host/port
        raise KubeconfigError(f"in-cluster configuration: {exc or type(exc).__name__}") from None

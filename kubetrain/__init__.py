"""kubetrain: a Kubernetes operator for distributed machine-learning training jobs."""

__version__ = "0.1.0"

GROUP = "kubetrain.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
OPERATOR_NAME = "kubetrain.io/operator"

"""An in-memory emulation of the Kubernetes API server for integration tests and `kubetrain dev`."""

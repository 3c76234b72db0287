"""The kubetrain.io/v1 API: models, defaulting, validation and CRD generation (all pure)."""

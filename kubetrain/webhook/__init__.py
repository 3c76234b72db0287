"""Admission webhooks: AdmissionReview v1 over HTTPS for defaulting and validation."""

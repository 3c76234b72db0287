"""Webhook TLS: CA and serving certificates, Secret storage, rotation, caBundle injection."""

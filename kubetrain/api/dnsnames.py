"""Kubernetes' name formats, as apimachinery's validation package checks them: the DNS-1123
label (`IsDNS1123Label`: namespaces, most object names' parts), the DNS-1123 subdomain
(`IsDNS1123Subdomain`: most object names), the DNS-1035 label (`IsDNS1035LabelName`: Service
names, and kubetrain's job names, which become host names)."""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_LABEL_LENGTH = 63
MAX_SUBDOMAIN_LENGTH = 253


def is_dns1123_subdomain(name: str) -> bool:
    """apimachinery's `IsDNS1123Subdomain`: at most 253 characters of the subdomain format."""
    return len(name) <= MAX_SUBDOMAIN_LENGTH and DNS1123_SUBDOMAIN.match(name) is not None

"""Kubernetes' name formats, as apimachinery's validation package checks them: the DNS-1123
label (`IsDNS1123Label`: namespaces, most object names' parts), the DNS-1123 subdomain
(`IsDNS1123Subdomain`: most object names), the DNS-1035 label (`IsDNS1035LabelName`: Service
names, and kubetrain's job names, which become host names) and the qualified name
(`IsQualifiedName`: label and annotation keys)."""

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


# The name part of a qualified name (apimachinery's qualifiedNameFmt).
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def qualified_name_problem(key: str) -> str | None:
    """Why `key` is not a qualified name (`[prefix/]name`, apimachinery's `IsQualifiedName`:
    label keys, and annotation keys lower-cased), or None."""
    prefix, sep, name = key.rpartition("/")
    if sep and not is_dns1123_subdomain(prefix):
        return "prefix must be a DNS-1123 subdomain (e.g. example.com)"
    if not name or len(name) > MAX_LABEL_LENGTH or not _NAME_PART.match(name):
        return (
            "name part must be 1-63 characters, alphanumeric, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None

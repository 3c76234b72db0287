"""Who the dashboard acts as for a request, and the CSRF token of that user. Pure.

Two ways to sign in (docs/operations.md, "Dashboard"):

- `token` mode: a bearer token in the request's `Authorization` header, or the one a user gave the
  login form, kept in the session cookie encrypted (Fernet, key known to this process only;
  HttpOnly, SameSite=Strict, Secure under TLS). Every API call carries that token.
- `local` mode (`kubetrain dev`, loopback only): one user, the owner of the kubeconfig; every API
  call is made with the kubeconfig's own credentials.
- `proxy` mode: an authenticating proxy in front of the dashboard forwards the user's name and
  groups in headers; every API call is made with the dashboard's own credentials impersonating
  that user (`Impersonate-User`, `Impersonate-Group`), so RBAC decides as for the user.

The token never appears in a page, a log line or a cache key: caches and CSRF tokens use a
SHA-256 fingerprint of it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken

TOKEN = "token"
PROXY = "proxy"
LOCAL = "local"
AUTH_MODES = (TOKEN, PROXY, LOCAL)
SESSION_COOKIE = "kubetrain_session"
SESSION_SECONDS = 8 * 3600
DEFAULT_USER_HEADER = "X-Forwarded-User"
DEFAULT_GROUPS_HEADER = "X-Forwarded-Groups"
MAX_TOKEN_LENGTH = 16384


@dataclass(frozen=True)
class Credentials:
    token: str = ""
    user: str = ""
    groups: tuple[str, ...] = ()
    local: bool = False  # the kubeconfig's owner (local mode): calls carry the kubeconfig's credentials

    def headers(self) -> list[tuple[str, str]]:
        """The headers every API call for this user carries."""
        if self.token:
            return [("Authorization", f"Bearer {self.token}")]
        if self.local:
            return []
        return [("Impersonate-User", self.user)] + [("Impersonate-Group", g) for g in self.groups]

    @property
    def fingerprint(self) -> str:
        """Stands for the user in caches and CSRF tokens; reveals nothing of the token."""
        if self.local:
            return hashlib.sha256(b"local").hexdigest()
        material = f"token\0{self.token}" if self.token else "proxy\0" + "\0".join((self.user, *self.groups))
        return hashlib.sha256(material.encode()).hexdigest()

    @property
    def display(self) -> str:
        return self.user or "token user"

    def __repr__(self) -> str:  # never print the token
        return (
            f"Credentials(user={self.user!r}, groups={self.groups!r}, token={'***' if self.token else ''!r})"
        )


def bearer_token(authorization: str) -> str:
    """The token of an `Authorization: Bearer <token>` header, "" otherwise."""
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if (
        scheme.lower() != "bearer"
        or not token
        or len(token) > MAX_TOKEN_LENGTH
        or any(c.isspace() for c in token)
    ):
        return ""
    return token


def credentials(
    mode: str,
    headers: Mapping[str, str],
    session_token: str = "",
    user_header: str = DEFAULT_USER_HEADER,
    groups_header: str = DEFAULT_GROUPS_HEADER,
) -> Credentials | None:
    """The request's credentials in `mode`; None when it has none (the login page)."""
    if mode == LOCAL:
        return Credentials(user="kubeconfig user", local=True)
    if mode == PROXY:
        user = headers.get(user_header, "").strip()
        if not user:
            return None
        groups = tuple(g.strip() for g in headers.get(groups_header, "").split(",") if g.strip())
        return Credentials(user=user, groups=groups)
    token = bearer_token(headers.get("Authorization", "")) or session_token
    return Credentials(token=token) if token else None


class Sessions:
    """The session cookie: the login form's token encrypted with this process's key."""

    def __init__(self, key: bytes | None = None) -> None:
        self._fernet = Fernet(key or Fernet.generate_key())
        self._csrf_key = hashlib.sha256(b"csrf\0" + (key or self._fernet.encrypt(b"csrf-seed"))).digest()

    def seal(self, token: str) -> str:
        return self._fernet.encrypt(token.encode()).decode()

    def open(self, cookie: str) -> str:
        """The token in a session cookie; "" when it is not ours or older than SESSION_SECONDS."""
        try:
            return self._fernet.decrypt(cookie.encode(), ttl=SESSION_SECONDS).decode()
        except (InvalidToken, ValueError):
            return ""

    def csrf_token(self, creds: Credentials) -> str:
        """The token every form of this user carries; bound to the user, unguessable elsewhere."""
        return hmac.new(self._csrf_key, creds.fingerprint.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, creds: Credentials, presented: str) -> bool:
        return hmac.compare_digest(self.csrf_token(creds), presented or "")

    def login_csrf_token(self, nonce: str) -> str:
        """The login form's token: bound to a random nonce cookie (no user yet)."""
        return hmac.new(self._csrf_key, b"login\0" + nonce.encode(), hashlib.sha256).hexdigest()

    def login_csrf_ok(self, nonce: str, presented: str) -> bool:
        return bool(nonce) and hmac.compare_digest(self.login_csrf_token(nonce), presented or "")

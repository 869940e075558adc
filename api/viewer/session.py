"""Who is looking at the viewer: a bearer token from the Authorization header or a sign-in session,
and the CSRF token every form posts back.

Signing in trades the token for a session: the cookie holds only an opaque random id (the secret
never leaves the sign-in request), HttpOnly, SameSite=Strict and scoped to /ui, so scripts cannot
read it and other sites cannot send it; Secure when `viewer.secure_cookie` is set (behind HTTPS)
or the request came over HTTPS. The server keeps the sessions in memory: one unused for
`viewer.idle_minutes` is gone, sign-out ends it at once, and a restart signs everyone out. Every
POST must also carry `csrf`, an HMAC of the session (or token hash) under a per-process secret,
and must not come from another origin.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

import msgspec
from litestar import Request
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException

from api.auth import LOCAL, Authenticator, Principal
from api.guard import Guard

COOKIE = "agentmem_ui"
_SECRET = secrets.token_bytes(32)  # forms from before a restart need a reload


class Viewer(msgspec.Struct, frozen=True):
    """The caller, the CSRF token of their session, and whether they signed in with the cookie."""

    who: Principal
    csrf: str
    cookie: bool


def _csrf(identity: str) -> str:
    return hmac.new(_SECRET, identity.encode(), hashlib.sha256).hexdigest()


def sign_in(auth: Authenticator, token: str) -> Principal:
    """The principal for a token typed into the sign-in form, or 401."""
    return auth(f"Bearer {token.strip()}")


class Sessions:
    """Signed-in viewer sessions: opaque ids to principals, ended by `idle_minutes` unused or sign-out.

    >>> s = Sessions(idle_minutes=30); sid = s.open(LOCAL); s.get(sid) == LOCAL
    True
    """

    def __init__(self, *, idle_minutes: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._idle = idle_minutes * 60
        self._clock = clock
        self._lock = threading.Lock()
        self._last_used: dict[str, tuple[Principal, float]] = {}

    def open(self, who: Principal) -> str:
        """A new session for `who`; its id goes into the cookie."""
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._last_used = {k: v for k, v in self._last_used.items() if now - v[1] < self._idle}
            self._last_used[sid] = (who, now)
        return sid

    def get(self, sid: str) -> Principal | None:
        """The session's principal (and the session used again now), or None if unknown or idle too long."""
        now = self._clock()
        with self._lock:
            found = self._last_used.get(sid)
            if found is None or now - found[1] >= self._idle:
                self._last_used.pop(sid, None)
                return None
            self._last_used[sid] = (found[0], now)
            return found[0]

    def close(self, sid: str) -> None:
        with self._lock:
            self._last_used.pop(sid, None)


def viewer(request: Request) -> Viewer:  # type: ignore[type-arg]
    """The caller from the Authorization header, else the cookie; 401 when neither holds a known token."""
    auth: Authenticator = request.app.state.auth
    if auth.open:
        return Viewer(LOCAL, _csrf("open"), cookie=False)
    header = request.headers.get("authorization")
    if header:
        who = auth(header)
        return Viewer(who, _csrf(hashlib.sha256(header[7:].strip().encode()).hexdigest()), cookie=False)
    sid = request.cookies.get(COOKIE)
    if not sid:
        raise NotAuthorizedException("sign in with a token to see this project")
    sessions: Sessions = request.app.state.sessions
    signed_in = sessions.get(sid)
    if signed_in is None:
        raise NotAuthorizedException("your session has ended: sign in again")
    return Viewer(signed_in, _csrf(f"session:{sid}"), cookie=True)


def same_origin(request: Request) -> None:  # type: ignore[type-arg]
    """403 for a form posted from another site (Origin or Sec-Fetch-Site say so; see api.guard)."""
    guard: Guard = request.app.state.guard
    why = guard.foreign(request.method, request.headers)
    if why:
        raise PermissionDeniedException(f"this form was posted from another site ({why})")


def check_form(request: Request, v: Viewer, form_csrf: str | None) -> None:  # type: ignore[type-arg]
    """403 unless the form came from this site and carries this session's CSRF token."""
    same_origin(request)
    if not form_csrf or not hmac.compare_digest(form_csrf.encode(), v.csrf.encode()):
        raise PermissionDeniedException("the form's CSRF token is missing or stale: reload the page and try again")

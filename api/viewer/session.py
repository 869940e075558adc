"""Who is looking at the viewer: a bearer token from the Authorization header or the sign-in cookie,
and the CSRF token every form posts back.

The sign-in form stores the token in an HttpOnly, SameSite=Strict cookie scoped to /ui, so scripts
cannot read it and other sites cannot send it. Every POST must also carry `csrf`, an HMAC of the
signed-in token's hash under a per-process secret, and must not come from another origin.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

import msgspec
from litestar import Request
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException

from api.auth import LOCAL, Authenticator, Principal

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


def viewer(request: Request) -> Viewer:  # type: ignore[type-arg]
    """The caller from the Authorization header, else the cookie; 401 when neither holds a known token."""
    auth: Authenticator = request.app.state.auth
    if auth.open:
        return Viewer(LOCAL, _csrf("open"), cookie=False)
    header = request.headers.get("authorization")
    if header:
        who = auth(header)
        return Viewer(who, _csrf(hashlib.sha256(header[7:].strip().encode()).hexdigest()), cookie=False)
    token = request.cookies.get(COOKIE)
    if not token:
        raise NotAuthorizedException("sign in with a token to see this project")
    who = sign_in(auth, token)
    return Viewer(who, _csrf(hashlib.sha256(token.strip().encode()).hexdigest()), cookie=True)


def same_origin(request: Request) -> None:  # type: ignore[type-arg]
    """403 for a form posted from another site (Origin or Sec-Fetch-Site say so)."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise PermissionDeniedException("this form was posted from another site")
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise PermissionDeniedException("this form was posted from another origin")


def check_form(request: Request, v: Viewer, form_csrf: str | None) -> None:  # type: ignore[type-arg]
    """403 unless the form came from this site and carries this session's CSRF token."""
    same_origin(request)
    if not form_csrf or not hmac.compare_digest(form_csrf.encode(), v.csrf.encode()):
        raise PermissionDeniedException("the form's CSRF token is missing or stale: reload the page and try again")

"""Bearer tokens mapped to projects and roles; secrets compared as hashes in constant time."""

from __future__ import annotations

import hmac
from collections.abc import Sequence

import msgspec
from litestar import Request
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException

from agentmem.errors import ValidationError
from api.settings import ROLES, TokenSpec, hash_token

ALL = "*"


class Principal(msgspec.Struct, frozen=True):
    """Who is calling: a token's name, role and projects (`*` for all)."""

    name: str
    role: str
    projects: tuple[str, ...]

    @property
    def all_projects(self) -> bool:
        return ALL in self.projects

    def can(self, role: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(role)

    def require(self, role: str) -> None:
        if not self.can(role):
            raise PermissionDeniedException(f"this token's role is {self.role}; {role} is needed")

    def project(self, requested: str | None) -> str:
        """The one project a request acts on: the one named, or the token's only project."""
        if requested is None:
            if len(self.projects) == 1 and not self.all_projects:
                return self.projects[0]
            raise PermissionDeniedException("name a project: this token covers more than one")
        if not self.allows(requested):
            raise PermissionDeniedException(f"this token has no access to project {requested!r}")
        return requested

    def allows(self, project: str) -> bool:
        return self.all_projects or project in self.projects

    def scope(self, requested: Sequence[str] | None = None) -> list[str] | None:
        """Projects a listing may cover (None: every project, for an all-projects token). An empty
        list is refused: it would read as "every project" to an all-projects token."""
        if requested is not None and not requested:
            raise ValidationError("projects: name at least one project, or leave the field out for all of yours")
        if requested:
            return [self.project(p) for p in requested]
        return None if self.all_projects else list(self.projects)


LOCAL = Principal(name="local", role="admin", projects=(ALL,))


def require_whole_service(who: Principal) -> None:
    """403 unless `who` is an admin of every project: whole-service figures (every project's index
    ids, request counts) are theirs alone."""
    who.require("admin")
    if not who.all_projects:
        raise PermissionDeniedException("this covers every project: it needs an admin token of all projects ('*')")


class Authenticator:
    """Finds the token for an Authorization header; with no tokens configured, everyone is local admin."""

    def __init__(self, tokens: Sequence[TokenSpec]) -> None:
        self._tokens = [(bytes.fromhex(t.sha256), Principal(t.name, t.role, tuple(t.projects))) for t in tokens]

    @property
    def open(self) -> bool:
        return not self._tokens

    def __call__(self, header: str | None) -> Principal:
        if self.open:
            return LOCAL
        if not header or not header.lower().startswith("bearer "):
            raise NotAuthorizedException("send Authorization: Bearer <token>")
        digest = bytes.fromhex(hash_token(header[7:].strip()))
        found = None
        for stored, principal in self._tokens:  # compare with every token: no early exit to time
            if hmac.compare_digest(stored, digest):
                found = principal
        if found is None:
            raise NotAuthorizedException("unknown or expired token")
        return found


async def principal(request: Request) -> Principal:  # type: ignore[type-arg]
    """Litestar dependency: the caller, or 401."""
    auth: Authenticator = request.app.state.auth
    return auth(request.headers.get("authorization"))

"""Server settings from a TOML file and environment variables (the environment wins).

```toml
host = "127.0.0.1"
port = 8420
data_dir = "/var/lib/agentmem"
# database_url = "postgresql://agentmem@db.internal/agentmem"  # many nodes on one PostgreSQL (pgvector >= 0.8)
max_body_bytes = 1048576                 # a request body's limit (413 over it)
max_import_bytes = 67108864              # POST /v1/import's body limit (64 MiB)
max_ingest_messages = 500                # most messages one POST /v1/ingest/conversation takes
header_timeout_seconds = 10              # a connection must send a request's headers within this
body_timeout_seconds = 60                # ... and a request's whole body within this, from its headers
allowed_hosts = ["mem.example.com"]      # Host names (or name:port) besides loopback, e.g. behind a proxy
allowed_origins = ["https://mem.example.com"]  # origins whose pages may call a tokenless server
sweep_every_minutes = 60                 # the archive sweep inside the server; 0 turns it off
sweep_max = 10000                        # most memories one sweep archives
consolidate_every_minutes = 60           # consolidation inside the server; 0 turns it off

[kinds.config]                           # override a kind's decay (or add a kind)
half_life_days = 45                      # "never" for a kind that never decays
start_confidence = 0.8

[retention]                              # weights sum to 1; see agentmem/retention.py
archive_below = 0.1

[consolidation]
min_sessions = 2

[provider]                               # optional: words episodes and semantic memories
base_url = "http://127.0.0.1:8080/v1"    # OpenAI-compatible, e.g. a local model server
model = "qwen2.5-7b-instruct"
api_key_env = "LOCAL_LLM_KEY"            # the key is read from this variable, never stored

[viewer]                                 # the web viewer's sign-in session
idle_minutes = 30                        # a session unused this long is signed out
secure_cookie = false                    # true behind an HTTPS proxy: the cookie gets the Secure flag

[[ingest_roots]]                         # directories POST /v1/ingest/notes and /code may read;
path = "/srv/notes/shop"                 # none configured: those routes are off
projects = ["shop"]                      # the projects its files may be admitted into

[[tokens]]
name = "ci-agent"
sha256 = "<hex sha256 of the secret>"   # or `token = "<secret>"`, hashed on load
role = "write"                           # read | write | admin
projects = ["shop"]                      # or ["*"] for every project
```

Environment: AGENTMEM_HOST, AGENTMEM_PORT, AGENTMEM_DATA_DIR, AGENTMEM_DATABASE_URL, AGENTMEM_CONFIG (the file),
AGENTMEM_MAX_BODY_BYTES, AGENTMEM_MAX_IMPORT_BYTES, AGENTMEM_MAX_INGEST_MESSAGES, AGENTMEM_HEADER_TIMEOUT_SECONDS,
AGENTMEM_ALLOWED_HOSTS and AGENTMEM_ALLOWED_ORIGINS (comma-separated; see api.guard),
AGENTMEM_SWEEP_EVERY_MINUTES, AGENTMEM_CONSOLIDATE_EVERY_MINUTES, AGENTMEM_TOKENS =
"name:secret:role:project1,project2;..." (secrets hashed on load, never kept in the clear), and
AGENTMEM_INGEST_ROOTS = "/abs/dir=project1,project2;..." (added to the file's ingest_roots).
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from pathlib import Path

import msgspec

from agentmem.cli import default_data_dir
from agentmem.config import ClaimRules, Config, ConsolidationSettings
from agentmem.errors import ValidationError
from agentmem.kinds import KindSpec, with_overrides
from agentmem.provider import ProviderConfig
from agentmem.retention import RetentionPolicy

ROLES = ("read", "write", "admin")


class TokenSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One bearer token: its name (for logs), the sha256 of its secret, a role and its projects."""

    name: str
    sha256: str
    role: str
    projects: list[str]


class IngestRoot(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A directory on the server that admin ingest may read, and the projects it may feed."""

    path: str
    projects: list[str]  # or ["*"] for every project

    def feeds(self, project: str) -> bool:
        return project in self.projects or "*" in self.projects


class ViewerSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    idle_minutes: float = 30.0  # a viewer session unused this long is signed out
    secure_cookie: bool = False  # set behind an HTTPS proxy: the session cookie is sent over HTTPS only


class Settings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    host: str = "127.0.0.1"
    port: int = 8420
    data_dir: str = ""
    # PostgreSQL (with pgvector) shared by every node, instead of the data directory's DuckDB file
    database_url: str = ""
    max_body_bytes: int = 1_048_576
    max_import_bytes: int = 64 * 1024 * 1024  # POST /v1/import's body (an export is about 4 KB a version)
    max_ingest_messages: int = 500  # most messages one POST /v1/ingest/conversation takes
    header_timeout_seconds: float = 10.0  # a connection must send a request's headers within this (api.deadline)
    body_timeout_seconds: float = 60.0  # ... and a request's whole body within this, from its headers
    allowed_hosts: list[str] = []  # Host names (or name:port) served besides loopback ones (api.guard)
    allowed_origins: list[str] = []  # origins (scheme://host[:port]) whose pages may call a tokenless server
    max_batch: int = 500
    tokens: list[TokenSpec] = []
    sweep_every_minutes: float = 60.0  # the archive sweep inside the server; 0 turns it off
    sweep_max: int = 10_000  # most memories one sweep archives
    kinds: dict[str, KindSpec] = {}  # per-kind decay overrides (and new kinds)
    retention: RetentionPolicy = RetentionPolicy()
    consolidate_every_minutes: float = 60.0  # consolidation inside the server; 0 turns it off
    consolidation: ConsolidationSettings = ConsolidationSettings()
    claims: ClaimRules = ClaimRules()  # the sentences of an observed turn that become claims
    provider: ProviderConfig | None = None  # an OpenAI-compatible endpoint that words abstractions
    ingest_roots: list[IngestRoot] = []  # where admin ingest may read; none: the routes are off
    viewer: ViewerSettings = ViewerSettings()

    def config(self) -> Config:
        """The engine settings these server settings imply."""
        try:
            return Config(
                kinds=with_overrides(self.kinds),
                retention=self.retention,
                sweep_max=self.sweep_max,
                consolidation=self.consolidation,
                claims=self.claims,
                provider=self.provider,
            )
        except ValueError as exc:
            raise ValidationError(f"config: {exc}") from None


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _token(raw: dict[str, object], where: str) -> TokenSpec:
    raw = dict(raw)
    secret = raw.pop("token", None)
    if secret is not None:
        if not isinstance(secret, str) or len(secret) < 16:
            raise ValidationError(f"{where}: a token secret needs at least 16 characters")
        raw["sha256"] = hash_token(secret)
    try:
        spec = msgspec.convert(raw, TokenSpec)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    if spec.role not in ROLES:
        raise ValidationError(f"{where}: role must be one of {', '.join(ROLES)}")
    if not spec.projects:
        raise ValidationError(f"{where}: a token needs at least one project (or '*')")
    if any(not p.strip() or p != p.strip() for p in spec.projects):
        raise ValidationError(f"{where}: project names may not be empty or padded with spaces")
    if len(spec.sha256) != 64:
        raise ValidationError(f"{where}: sha256 must be 64 hex characters")
    return spec


HOST = r"(?:[a-z0-9._-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?"  # name, IPv4 or [IPv6], and a port or not


def _check_hosts(hosts: list[str], origins: list[str]) -> None:
    """ValidationError unless each host is `name` or `name:port` and each origin `scheme://host[:port]`."""
    for host in hosts:
        if not re.fullmatch(HOST, host.lower()):
            raise ValidationError(f"config: allowed_hosts entry {host!r} is not a host name or host:port")
    for origin in origins:
        if not re.fullmatch(f"https?://{HOST}/?", origin.lower()):
            raise ValidationError(f"config: allowed_origins entry {origin!r} is not an origin like https://host[:port]")


def load(config: str | Path | None = None, env: dict[str, str] | None = None) -> Settings:
    """Settings from `config` (or AGENTMEM_CONFIG) overlaid with the environment."""
    env = dict(os.environ if env is None else env)
    raw: dict[str, object] = {}
    path = config or env.get("AGENTMEM_CONFIG")
    if path:
        try:
            raw = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValidationError(f"cannot read config {path}: {exc}") from None
    listed = raw.pop("tokens", None) or []
    if not isinstance(listed, list) or not all(isinstance(t, dict) for t in listed):
        raise ValidationError(f"{path}: tokens must be a list of tables ([[tokens]])")
    tokens = [_token(t, f"{path} tokens[{i}]") for i, t in enumerate(listed)]
    for key, name, kind in (
        ("AGENTMEM_HOST", "host", str),
        ("AGENTMEM_PORT", "port", int),
        ("AGENTMEM_DATA_DIR", "data_dir", str),
        ("AGENTMEM_DATABASE_URL", "database_url", str),
        ("AGENTMEM_MAX_BODY_BYTES", "max_body_bytes", int),
        ("AGENTMEM_MAX_IMPORT_BYTES", "max_import_bytes", int),
        ("AGENTMEM_MAX_INGEST_MESSAGES", "max_ingest_messages", int),
        ("AGENTMEM_HEADER_TIMEOUT_SECONDS", "header_timeout_seconds", float),
        ("AGENTMEM_BODY_TIMEOUT_SECONDS", "body_timeout_seconds", float),
        ("AGENTMEM_SWEEP_EVERY_MINUTES", "sweep_every_minutes", float),
        ("AGENTMEM_CONSOLIDATE_EVERY_MINUTES", "consolidate_every_minutes", float),
    ):
        if key in env:
            try:
                raw[name] = kind(env[key])
            except ValueError:
                raise ValidationError(f"{key}: expected {kind.__name__}, got {env[key]!r}") from None
    for key, name in (("AGENTMEM_ALLOWED_HOSTS", "allowed_hosts"), ("AGENTMEM_ALLOWED_ORIGINS", "allowed_origins")):
        if key in env:
            raw[name] = [v.strip() for v in env[key].split(",") if v.strip()]
    for n, item in enumerate(filter(None, env.get("AGENTMEM_TOKENS", "").split(";"))):
        parts = item.split(":")
        if len(parts) != 4:
            raise ValidationError(f"AGENTMEM_TOKENS entry {n}: expected name:secret:role:project1,project2")
        name, secret, role, projects = parts
        tokens.append(
            _token({"name": name, "token": secret, "role": role, "projects": projects.split(",")}, "AGENTMEM_TOKENS")
        )
    roots: list[object] = list(raw.pop("ingest_roots", None) or [])  # type: ignore[call-overload]
    for item in filter(None, env.get("AGENTMEM_INGEST_ROOTS", "").split(";")):
        path, _, projects = item.rpartition("=")
        roots.append({"path": path, "projects": [p for p in projects.split(",") if p]})
    raw["ingest_roots"] = roots
    kinds = raw.get("kinds")
    if isinstance(kinds, dict):  # TOML has no null: half_life_days = "never" means the kind never decays
        for spec in kinds.values():
            if isinstance(spec, dict) and spec.get("half_life_days") == "never":
                spec["half_life_days"] = None
    try:
        settings = msgspec.convert({**raw, "tokens": []}, Settings)
    except (msgspec.ValidationError, ValueError) as exc:
        raise ValidationError(f"config: {exc}") from None
    for name in ("sweep_every_minutes", "consolidate_every_minutes"):
        if not 0 <= getattr(settings, name) <= 525_600:
            raise ValidationError(f"config: {name} must be from 0 (off) to 525600")
    for name in ("max_body_bytes", "max_import_bytes", "max_ingest_messages"):
        if getattr(settings, name) < 1:
            raise ValidationError(f"config: {name} must be at least 1")
    for name in ("header_timeout_seconds", "body_timeout_seconds"):
        if not 0 < getattr(settings, name) <= 3600:
            raise ValidationError(f"config: {name} must be above 0 and at most 3600")
    _check_hosts(settings.allowed_hosts, settings.allowed_origins)
    if not 0 < settings.viewer.idle_minutes <= 525_600:
        raise ValidationError("config: viewer.idle_minutes must be above 0 and at most 525600")
    for i, root in enumerate(settings.ingest_roots):
        if not Path(root.path).is_absolute() or not root.projects:
            raise ValidationError(
                f"config: ingest_roots[{i}] needs an absolute path and at least one project (or '*'); "
                "AGENTMEM_INGEST_ROOTS entries read /abs/dir=project1,project2"
            )
    if settings.database_url and not settings.database_url.startswith(("postgresql://", "postgres://")):
        raise ValidationError("config: database_url must be a postgresql:// URL")
    settings.config()  # fail now, not at startup, on bad kinds or retention settings
    return msgspec.structs.replace(settings, tokens=tokens, data_dir=settings.data_dir or str(default_data_dir()))

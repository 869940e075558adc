"""Walking a directory for notes or source files: what is skipped, and why (every skip is counted).

Skipped: dependency trees, virtualenvs, build output, caches and VCS folders (`SKIP_DIRS`, any
hidden directory, `*.egg-info`), lock files, files of other types, binary files (a NUL byte or
not UTF-8), files over `max_bytes`, unreadable files and directories, and symbolic links that
leave the tree or loop. Directory links are never followed, so a link loop cannot recurse.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterator
from pathlib import Path

from agentmem.errors import ValidationError

SKIP_DIRS = frozenset(
    """node_modules bower_components jspm_packages vendor third_party site-packages dist-packages venv env
    virtualenv __pycache__ __pypackages__ build dist out target bin obj coverage htmlcov
    .git .hg .svn .bzr .tox .nox .venv .mypy_cache .pytest_cache .ruff_cache .cache .next .nuxt .gradle .idea
    .vscode .terraform .eggs""".split()
)
LOCK_FILES = frozenset(
    """package-lock.json npm-shrinkwrap.json yarn.lock pnpm-lock.yaml bun.lockb poetry.lock Pipfile.lock uv.lock
    pdm.lock Cargo.lock Gemfile.lock composer.lock go.sum mix.lock flake.lock packages.lock.json
    pubspec.lock Podfile.lock""".split()
)
MAX_FILE_BYTES = 1024 * 1024


def _skip_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.startswith(".") or name.endswith(".egg-info")


def read_text(path: Path, max_bytes: int, skipped: Counter[str]) -> str | None:
    """The file's text, or None with the reason counted (too_large, unreadable, binary)."""
    try:
        if path.stat().st_size > max_bytes:
            skipped["too_large"] += 1
            return None
        data = path.read_bytes()
    except OSError:
        skipped["unreadable"] += 1
        return None
    if b"\x00" in data[:8192]:
        skipped["binary"] += 1
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        skipped["binary"] += 1
        return None


def walk(
    root: str | Path, suffixes: Collection[str], skipped: Counter[str], *, max_bytes: int = MAX_FILE_BYTES
) -> Iterator[tuple[str, str]]:
    """(path relative to root, text) of every wanted file under root, in a stable order."""
    base = Path(root).expanduser()
    if not base.exists():
        raise ValidationError(f"no such directory: {base}")
    if not base.is_dir():
        raise ValidationError(f"not a directory: {base}")
    if not os.access(base, os.R_OK | os.X_OK):
        raise ValidationError(f"cannot read directory {base}")
    real_root = base.resolve()

    def unreadable(_: OSError) -> None:
        skipped["unreadable"] += 1

    for dirpath, dirnames, filenames in os.walk(base, onerror=unreadable, followlinks=False):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            if (here / d).is_symlink():
                skipped["symlink"] += 1
            elif _skip_dir(d):
                skipped["excluded_dir"] += 1
            else:
                keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            path = here / name
            if name in LOCK_FILES or name.endswith(".lock"):
                skipped["lock_file"] += 1
                continue
            if path.suffix.lower() not in suffixes:
                skipped["other_type"] += 1
                continue
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    skipped["symlink_loop"] += 1
                    continue
                if not target.is_relative_to(real_root) or not target.is_file():
                    skipped["symlink"] += 1
                    continue
            text = read_text(path, max_bytes, skipped)
            if text is not None:
                yield path.relative_to(base).as_posix(), text

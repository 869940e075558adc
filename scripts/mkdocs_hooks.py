"""mkdocs hook (mkdocs.yml `hooks:`): publishes the benchmarks' own results, benchmarks/results/*.md
(full tables) and *.png (plots), under benchmarks/results/ in the site, so the benchmark pages show
the files the benchmarks wrote rather than copies that could fall behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def on_files(files: Files, config: Any) -> Files:
    root = str(RESULTS.parents[1])  # the repository: src_uri below is the file's path in it
    for path in sorted(RESULTS.iterdir()):
        if path.suffix in (".md", ".png"):
            uri = f"benchmarks/results/{path.name}"
            site, flat = config["site_dir"], config["use_directory_urls"]
            files.append(File(uri, src_dir=root, dest_dir=site, use_directory_urls=flat))
    return files

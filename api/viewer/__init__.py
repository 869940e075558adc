"""The web viewer under /ui/: server-rendered pages over the same Memory, behind the same tokens."""

from api.viewer.routes import http_error, owns, router

__all__ = ["http_error", "owns", "router"]

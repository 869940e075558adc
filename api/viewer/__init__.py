"""The web viewer under /ui/: server-rendered pages over the same Memory, behind the same tokens."""

from api.viewer.routes import router

__all__ = ["router"]

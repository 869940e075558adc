"""The API docs at /docs/: Swagger UI served from the `swagger-ui-bundle-v2` package, never a CDN,
so the page works on a machine with no internet (agentmem is local-first)."""

from __future__ import annotations

from litestar import Router
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.static_files import create_static_files_router
from swagger_ui_bundle import swagger_ui_path

import agentmem

ASSETS = "/docs/assets"


def assets() -> Router:
    """Swagger UI's JavaScript, CSS and icons, from the installed package."""
    return create_static_files_router(path=ASSETS, directories=[swagger_ui_path], name="docs-assets")


def openapi_config() -> OpenAPIConfig:
    swagger = SwaggerRenderPlugin(
        path="/",
        js_url=f"{ASSETS}/swagger-ui-bundle.js",
        css_url=f"{ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS}/favicon-32x32.png'>",
    )
    return OpenAPIConfig(
        title="agentmem",
        version=agentmem.__version__,
        description="A versioned memory service for AI agents. Send `Authorization: Bearer <token>`.",
        path="/docs",
        render_plugins=[swagger, JsonRenderPlugin(path="/openapi.json")],
        components=Components(security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}),
        security=[{"bearer": []}],
        use_handler_docstrings=True,
    )

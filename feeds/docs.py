"""``/docs``: Swagger UI from the assets the swagger-ui-bundle package ships, never a CDN.

FastAPI's own ``/docs`` page loads Swagger UI's script and stylesheet from a
CDN, so it is blank offline. This router serves the same page with those
assets read from the installed package; the app is built with
``docs_url=None`` and includes ``router()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import APIRouter, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from swagger_ui_bundle import swagger_ui_path

ASSETS: Final = Path(swagger_ui_path)
SERVED: Final = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


def router(title: str, openapi_url: str = "/openapi.json") -> APIRouter:
    """The Swagger UI page and its three packaged assets (nothing else from the package)."""
    api = APIRouter(include_in_schema=False)

    @api.get("/docs", response_class=HTMLResponse)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )

    @api.get("/docs/assets/{name}")
    def asset(name: str) -> FileResponse:
        media = SERVED.get(name)
        if media is None:
            raise HTTPException(404, f"no documentation asset {name!r}")
        return FileResponse(ASSETS / name, media_type=media)

    return api


__all__ = ["router"]

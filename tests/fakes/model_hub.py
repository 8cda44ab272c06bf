"""A fake Hugging Face hub: `/<owner>/<name>/resolve/main/<file>` serves the files of a local
model folder (any owner/name), counting requests; `missing` names files it answers 404 for."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from tests.fakes.local_server import LocalServer


class FakeHub(LocalServer):
    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.missing: set[str] = set()
        self.requests: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{owner}/{name}/resolve/main/{file}", self._file)
        return app

    async def _file(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["file"]
        self.requests.append(request.path)
        path = self.folder / name
        if name in self.missing or "/" in name or not path.is_file():
            return web.Response(status=404, text="Entry not found")
        return web.FileResponse(path)

"""The endpoint functions of :mod:`attractor.server.app`.

Errors become JSON ``{"error": "..."}`` with a status that says whose fault it
is: 400 bad request, 403 a path outside the root, 404 unknown run or
question, 409 the run is not in a state for that.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Awaitable, Callable
from functools import wraps
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse

from attractor.api import load
from attractor.dot.graph import Graph
from attractor.engine.checkpoint import RUNNING
from attractor.engine.executor import worker_of
from attractor.engine.inventory import (
    RUNS_SUBDIR,
    RunReader,
    RunState,
    is_run_dir,
    list_runs,
    load_checkpoint,
    run_graph,
    run_info,
    stage_files,
)
from attractor.engine.rundir import RunDir
from attractor.errors import AttractorError, ValidationError
from attractor.fileio import atomic_write_text
from attractor.render import render
from attractor.server.confine import inside
from attractor.server.runs import RunManager
from attractor.server.sse import event_stream

STATIC = Path(__file__).parent / "static"
_RUN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
#: A run id is a directory name: longer ones name no run.
MAX_RUN_ID = 255
#: Where posted DOT text is kept, under the root, so its run can be resumed.
SUBMITTED = Path(".attractor") / "submitted"
#: The largest request body taken (DOT source included).
MAX_BODY = 4 * 1024 * 1024

Endpoint = Callable[["Handlers", Request], Awaitable[Response]]


class Problem(Exception):
    """An HTTP error with its status and one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _answers(endpoint: Endpoint) -> Endpoint:
    """Turn the library's errors into JSON error responses."""

    @wraps(endpoint)
    async def wrapper(self: Handlers, request: Request) -> Response:
        try:
            return await endpoint(self, request)
        except Problem as problem:
            return JSONResponse({"error": str(problem)}, status_code=problem.status)
        except PermissionError as exc:
            return JSONResponse({"error": str(exc)}, status_code=403)
        except ValidationError as exc:
            diagnostics = [d.to_json() for d in exc.diagnostics]
            return JSONResponse({"error": str(exc), "diagnostics": diagnostics}, status_code=400)
        except AttractorError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)

    return wrapper


class Handlers:
    """One method per endpoint, sharing the run manager."""

    def __init__(self, manager: RunManager) -> None:
        self.manager = manager
        self._graphs: dict[Path, tuple[float, Graph | None]] = {}
        self._readers: dict[Path, RunReader] = {}
        #: Graphviz keeps global state: one picture is drawn at a time.
        self._drawing = threading.Lock()

    # -- lookup -------------------------------------------------------------

    def run_path(self, request: Request) -> Path:
        run_id = str(request.path_params["id"])
        if len(run_id) <= MAX_RUN_ID and _RUN_ID.match(run_id):
            for base in (self.manager.root / RUNS_SUBDIR, self.manager.root):
                path = base / run_id
                if not is_run_dir(path):
                    continue
                if not inside(self.manager.root, path):
                    raise Problem(
                        403,
                        f"run {run_id} lives outside the server root (a symbolic link leads "
                        "out of it); the server shows runs under its root only",
                    )
                return path
        shown = run_id if len(run_id) <= 80 else f"{run_id[:60]}... ({len(run_id)} characters)"
        raise Problem(404, f"no run {shown!r} under the server root")

    def graph_of(self, path: Path) -> Graph | None:
        """The run's pipeline copy, parsed once per change of the file."""
        copy = RunDir(path).pipeline_path
        try:
            stamp = copy.stat().st_mtime
        except OSError:
            return None
        cached = self._graphs.get(path)
        if cached is None or cached[0] != stamp:
            cached = (stamp, run_graph(path))
            self._graphs[path] = cached
        return cached[1]

    def state_of(self, path: Path) -> RunState:
        """The run's state, read incrementally (a new reader when its pipeline changed)."""
        graph = self.graph_of(path)
        reader = self._readers.get(path)
        if reader is None or reader.graph is not graph:
            reader = self._readers[path] = RunReader(path, graph)
        return reader.read()

    # -- endpoints ----------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    @_answers
    async def list_runs(self, request: Request) -> Response:
        runs = list_runs(self.manager.root)
        return JSONResponse({"runs": [self._with_activity(r.to_json()) for r in runs]})

    @_answers
    async def start(self, request: Request) -> Response:
        body = await _json_body(request)
        source = self._source(body)
        graph = load(source)
        settings = _object(body, "settings")
        run_id = await self.manager.start(graph, source, settings, _object(body, "context"))
        return JSONResponse({"id": run_id, "url": f"/pipelines/{run_id}"}, status_code=201)

    @_answers
    async def status(self, request: Request) -> Response:
        path = self.run_path(request)
        data = self.state_of(path).to_json()
        return JSONResponse(self._with_activity(data))

    @_answers
    async def events(self, request: Request) -> Response:
        path = self.run_path(request)
        raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not raw.isdigit():
            raise Problem(400, f"Last-Event-ID {raw!r} is not an event id (a whole number)")
        run_id = path.name
        stream = event_stream(
            path,
            int(raw),
            self.manager.changes_for(run_id),
            lambda: run_id in self.manager.active,
            lambda: self.manager.closing,
        )
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    @_answers
    async def cancel(self, request: Request) -> Response:
        path = self.run_path(request)
        await _json_body(request, required=False)
        if not self.manager.cancel(path.name):
            raise Problem(409, f"run {path.name} is not running in this server")
        return JSONResponse({"id": path.name, "status": "cancelling"}, status_code=202)

    @_answers
    async def resume(self, request: Request) -> Response:
        path = self.run_path(request)
        body = await _json_body(request, required=False)
        if path.name in self.manager.active or run_info(path).status == RUNNING:
            raise Problem(409, f"run {path.name} is still running; cancel it first")
        graph = load(RunDir(path).pipeline_path)
        run_id = await self.manager.resume(path, graph, _object(body, "settings"))
        return JSONResponse({"id": run_id, "url": f"/pipelines/{run_id}"})

    @_answers
    async def graph(self, request: Request) -> Response:
        path = self.run_path(request)
        graph = self.graph_of(path)
        if graph is None:
            raise Problem(409, f"run {path.name}: its pipeline.dot copy cannot be read")
        state = self.state_of(path)

        def draw() -> bytes:
            with self._drawing:
                return render(graph, state, "svg")

        svg = await anyio.to_thread.run_sync(draw)
        return Response(svg, media_type="image/svg+xml")

    @_answers
    async def questions(self, request: Request) -> Response:
        path = self.run_path(request)
        run = self.manager.active.get(path.name)
        pending = list(run.interviewer.pending.values()) if run else []
        return JSONResponse({"questions": [p.to_json() for p in pending]})

    @_answers
    async def answer(self, request: Request) -> Response:
        path = self.run_path(request)
        qid = str(request.path_params["qid"])
        run = self.manager.active.get(path.name)
        if run is None or qid not in run.interviewer.pending:
            raise Problem(404, f"no question {qid!r} is waiting in run {path.name}")
        body = await _json_body(request)
        text = body.get("answer")
        if not isinstance(text, str) or not text.strip():
            raise Problem(400, 'give the answer as {"answer": "KEY or label", "comment": "..."}')
        comment = body.get("comment") or ""
        answer = run.interviewer.answer(qid, text, str(comment))
        return JSONResponse({"id": qid, "answer": answer.value, "label": answer.text})

    @_answers
    async def checkpoint(self, request: Request) -> Response:
        return JSONResponse(self._checkpoint(request).to_json())

    @_answers
    async def context(self, request: Request) -> Response:
        return JSONResponse({"context": self._checkpoint(request).context})

    @_answers
    async def node(self, request: Request) -> Response:
        path = self.run_path(request)
        node_id = str(request.path_params["node"])
        graph = self.graph_of(path)
        state = self.state_of(path)
        if node_id not in state.nodes:
            raise Problem(404, f"run {path.name} has no node {node_id!r}")
        data: dict[str, Any] = {"node": state.nodes[node_id].to_json()}
        if graph is not None and graph.has_node(node_id):
            node = graph.node(node_id)
            data.update(label=node.label, handler=node.handler_type, prompt=node.prompt)
        data["files"] = stage_files(path, node_id)
        return JSONResponse(data)

    # -- helpers ------------------------------------------------------------

    def _checkpoint(self, request: Request) -> Any:
        path = self.run_path(request)
        checkpoint = load_checkpoint(path)
        if checkpoint is None:
            raise Problem(404, f"run {path.name} has no readable checkpoint yet")
        return checkpoint

    def _with_activity(self, data: dict[str, Any]) -> dict[str, Any]:
        run = self.manager.active.get(str(data["id"]))
        data["active"] = run is not None
        data["questions"] = [p.to_json() for p in run.interviewer.pending.values()] if run else []
        data["error"] = run.error if run else ""
        path = data.get("path")
        # Which cluster node runs it (the Ray executor); None for a local run.
        data["worker"] = worker_of(Path(str(path))) if path else None
        return data

    def _source(self, body: dict[str, Any]) -> Path:
        text, relative = body.get("dot_source"), body.get("path")
        if (text is None) == (relative is None):
            raise Problem(400, 'give either "dot_source" (DOT text) or "path" (a file under root)')
        if isinstance(relative, str):
            source = self.manager.confine(relative, "path")
            if not source.is_file():
                raise Problem(404, f"path {relative!r}: no such pipeline file under the root")
            return source
        if not isinstance(text, str) or not text.strip():
            raise Problem(400, '"dot_source" must be the DOT text of a pipeline')
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        folder = self.manager.root / SUBMITTED
        os.makedirs(folder, exist_ok=True)
        source = folder / f"{digest}.dot"
        atomic_write_text(source, text)
        return source


async def _json_body(request: Request, *, required: bool = True) -> dict[str, Any]:
    # A JSON content type makes a browser ask first (CORS preflight) before a
    # page from another site may post here; this server never says yes.
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise Problem(415, "send the request with Content-Type: application/json")
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise Problem(413, f"request body over {MAX_BODY // (1024 * 1024)} MiB")
    if not raw.strip() and not required:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise Problem(400, f"request body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise Problem(400, "request body must be a JSON object")
    return data


def _object(body: dict[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key) or {}
    if not isinstance(value, dict):
        raise Problem(400, f'"{key}" must be a JSON object')
    return value

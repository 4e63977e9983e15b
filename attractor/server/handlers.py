"""The endpoint functions of :mod:`attractor.server.app`.

Errors become JSON ``{"error": "..."}`` with a status that says whose fault it
is: 400 bad request, 403 a path outside the root, 404 unknown run or
question, 409 the run is not in a state for that.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Awaitable, Callable
from functools import wraps
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

from attractor.api import load
from attractor.dot.graph import Graph
from attractor.errors import AttractorError, UsageError, ValidationError
from attractor.fileio import atomic_write_text
from attractor.launch import RunDir, worker_of
from attractor.render import render
from attractor.runview.inventory import (
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
from attractor.server.body import Problem, json_body, json_object
from attractor.server.confine import inside
from attractor.server.resume import check_resumable, continuation_of
from attractor.server.runs import RunManager
from attractor.server.sse import EventStreamResponse, event_stream
from attractor.settings import environment_redactor
from attractor.workspace.diff import run_diff

STATIC = Path(__file__).parent / "static"
_RUN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
#: A run id is a directory name: longer ones name no run.
MAX_RUN_ID = 255
#: Where posted DOT text is kept, under the root, so its run can be resumed.
SUBMITTED = Path(".attractor") / "submitted"
#: The largest pipeline a request may start (DOT text, or a file under the root).
MAX_DOT = 1024 * 1024
#: The longest stage diff the node panel gets (characters); a longer one is cut.
MAX_DIFF = 512 * 1024
#: Parsing and drawing take a worker thread each; this many at once at most.
WORKERS = 4

Endpoint = Callable[["Handlers", Request], Awaitable[Response]]


def _answers(endpoint: Endpoint) -> Endpoint:
    """Turn the library's errors into JSON error responses."""

    @wraps(endpoint)
    async def wrapper(self: Handlers, request: Request) -> Response:
        try:
            return await endpoint(self, request)
        except Problem as problem:
            return JSONResponse(
                {"error": str(problem)}, status_code=problem.status, headers=problem.headers
            )
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
        #: Stage files are read while their command still writes them (scrubbed only
        #: when it ends), and a run's error is kept in memory: both pass through this.
        self.redactor = environment_redactor()
        self._graphs: dict[Path, tuple[float, Graph | None]] = {}
        self._readers: dict[Path, RunReader] = {}
        #: Graphviz keeps global state: one picture is drawn at a time.
        self._drawing = threading.Lock()
        self._reading = threading.Lock()
        self._workers = anyio.CapacityLimiter(WORKERS)

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
        raise Problem(404, f"no run {_shown(run_id)} under the server root")

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

    async def read_run(self, path: Path) -> tuple[Graph | None, RunState]:
        """The run's pipeline and state, read in a worker thread (files may be large)."""

        def read() -> tuple[Graph | None, RunState]:
            with self._reading:  # the caches are shared
                return self.graph_of(path), self.state_of(path)

        return await anyio.to_thread.run_sync(read)

    # -- endpoints ----------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    @_answers
    async def list_runs(self, request: Request) -> Response:
        def listing() -> list[dict[str, Any]]:
            return [_with_worker(r.to_json()) for r in list_runs(self.manager.root)]

        runs = await anyio.to_thread.run_sync(listing)
        return JSONResponse({"runs": [self._with_activity(r) for r in runs]})

    @_answers
    async def start(self, request: Request) -> Response:
        body = await json_body(request)
        settings = json_object(body, "settings")
        seed = json_object(body, "context")

        def prepare() -> tuple[Path, Graph]:  # parsing a large pipeline takes a while
            source = self._source(body)
            return source, load(source)

        source, graph = await anyio.to_thread.run_sync(prepare, limiter=self._workers)
        run_id = await self.manager.start(graph, source, settings, seed)
        return JSONResponse({"id": run_id, "url": f"/pipelines/{run_id}"}, status_code=201)

    @_answers
    async def status(self, request: Request) -> Response:
        path = self.run_path(request)
        _, state = await self.read_run(path)
        data = await anyio.to_thread.run_sync(_with_worker, state.to_json())
        return JSONResponse(self._with_activity(data))

    @_answers
    async def events(self, request: Request) -> Response:
        path = self.run_path(request)
        raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
            shown = raw if len(raw) <= 40 else f"{raw[:30]}... ({len(raw)} characters)"
            raise Problem(400, f"Last-Event-ID {shown!r} is not an event id (a whole number)")
        run_id = path.name
        stream = event_stream(
            path,
            int(raw),
            self.manager.changes_for(run_id),
            lambda: run_id in self.manager.active,
            lambda: self.manager.closing,
        )
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return EventStreamResponse(stream, headers)

    @_answers
    async def cancel(self, request: Request) -> Response:
        path = self.run_path(request)
        await json_body(request, required=False)
        if not self.manager.cancel(path.name):
            raise Problem(409, f"run {path.name} is not running in this server")
        return JSONResponse({"id": path.name, "status": "cancelling"}, status_code=202)

    @_answers
    async def resume(self, request: Request) -> Response:
        path = self.run_path(request)
        body = await json_body(request, required=False)
        how = continuation_of(body)
        info = self.manager.ended_by_error(run_info(path).to_json())
        check_resumable(path.name, str(info["status"]), how, path.name in self.manager.active)
        copy = RunDir(path).pipeline_path
        _check_size(copy, f"run {path.name}'s pipeline copy")
        graph = await anyio.to_thread.run_sync(load, copy, limiter=self._workers)
        if how is not None and how.from_node is not None and not graph.has_node(how.from_node):
            raise Problem(400, f'"from": run {path.name} has no node {_shown(how.from_node)}')
        run_id = await self.manager.resume(path, graph, json_object(body, "settings"), how)
        return JSONResponse({"id": run_id, "url": f"/pipelines/{run_id}"})

    @_answers
    async def graph(self, request: Request) -> Response:
        path = self.run_path(request)
        graph, state = await self.read_run(path)
        if graph is None:
            raise Problem(409, f"run {path.name}: its pipeline.dot copy cannot be read")

        def draw() -> bytes:
            with self._drawing:
                return render(graph, state, "svg")

        svg = await anyio.to_thread.run_sync(draw, limiter=self._workers)
        return Response(svg, media_type="image/svg+xml")

    @_answers
    async def questions(self, request: Request) -> Response:
        path = self.run_path(request)
        run = self.manager.active.get(path.name)
        pending = list(run.interviewer.pending.values()) if run else []
        return JSONResponse({"questions": self.redactor.value([p.to_json() for p in pending])})

    @_answers
    async def answer(self, request: Request) -> Response:
        path = self.run_path(request)
        qid = str(request.path_params["qid"])
        run = self.manager.active.get(path.name)
        if run is None or qid not in run.interviewer.pending:
            raise Problem(404, f"no question {_shown(qid)} is waiting in run {path.name}")
        body = await json_body(request)
        text = body.get("answer")
        if not isinstance(text, str) or not text.strip():
            raise Problem(400, 'give the answer as {"answer": "KEY or label", "comment": "..."}')
        comment = body.get("comment") or ""
        answer = run.interviewer.answer(qid, text, str(comment))
        return JSONResponse({"id": qid, "answer": answer.value, "label": answer.text})

    @_answers
    async def checkpoint(self, request: Request) -> Response:
        return JSONResponse((await self._checkpoint(request)).to_json())

    @_answers
    async def context(self, request: Request) -> Response:
        return JSONResponse({"context": (await self._checkpoint(request)).context})

    @_answers
    async def node(self, request: Request) -> Response:
        path = self.run_path(request)
        node_id = str(request.path_params["node"])
        graph, state = await self.read_run(path)
        if node_id not in state.nodes:
            raise Problem(404, f"run {path.name} has no node {_shown(node_id)}")
        data: dict[str, Any] = {"node": state.nodes[node_id].to_json()}
        if graph is not None and graph.has_node(node_id):
            node = graph.node(node_id)
            data.update(label=node.label, handler=node.handler_type, prompt=node.prompt)
        data["files"] = await anyio.to_thread.run_sync(stage_files, path, node_id)
        return JSONResponse(self.redactor.value(data))  # the prompt too, as the graph spells it

    @_answers
    async def node_diff(self, request: Request) -> Response:
        """What the stage changed in the run's workspace: the diff and its ``--stat``."""
        path = self.run_path(request)
        node_id = str(request.path_params["node"])
        try:
            diff = await run_diff(path, node_id)
            stat = await run_diff(path, node_id, stat=True)
        except UsageError as err:
            raise Problem(404, str(err)) from None
        cut = len(diff) > MAX_DIFF
        data = {"node": node_id, "diff": diff[:MAX_DIFF], "stat": stat, "truncated": cut}
        return JSONResponse(self.redactor.value(data))

    # -- helpers ------------------------------------------------------------

    async def _checkpoint(self, request: Request) -> Any:
        path = self.run_path(request)
        checkpoint = await anyio.to_thread.run_sync(load_checkpoint, path)
        if checkpoint is None:
            raise Problem(404, f"run {path.name} has no readable checkpoint yet")
        return checkpoint

    def _with_activity(self, data: dict[str, Any]) -> dict[str, Any]:
        run = self.manager.active.get(str(data["id"]))
        data["active"] = run is not None
        data["questions"] = [p.to_json() for p in run.interviewer.pending.values()] if run else []
        data["error"] = run.error if run else ""
        return self.redactor.value(self.manager.ended_by_error(data))  # type: ignore[no-any-return]

    def _source(self, body: dict[str, Any]) -> Path:
        text, relative = body.get("dot_source"), body.get("path")
        if (text is None) == (relative is None):
            raise Problem(400, 'give either "dot_source" (DOT text) or "path" (a file under root)')
        if isinstance(relative, str):
            source = self.manager.confine(relative, "path")
            if not source.is_file():
                raise Problem(404, f"path {relative!r}: no such pipeline file under the root")
            _check_size(source, f"path {relative!r}")
            return source
        if not isinstance(text, str) or not text.strip():
            raise Problem(400, '"dot_source" must be the DOT text of a pipeline')
        encoded = text.encode("utf-8")
        if len(encoded) > MAX_DOT:
            raise Problem(413, f'"dot_source" is {len(encoded)} bytes; {_DOT_LIMIT}')
        digest = hashlib.sha256(encoded).hexdigest()[:16]
        folder = self.manager.root / SUBMITTED
        os.makedirs(folder, exist_ok=True)
        source = folder / f"{digest}.dot"
        atomic_write_text(source, text)
        return source


def _shown(name: str) -> str:
    """A name from the URL for a message: quoted, and cut when long."""
    return repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name)} characters)"


def _with_worker(data: dict[str, Any]) -> dict[str, Any]:
    """Which cluster node runs the run (the Ray executor); None for a local run."""
    path = data.get("path")
    data["worker"] = worker_of(Path(str(path))) if path else None
    return data


_DOT_LIMIT = f"a pipeline the server starts has at most {MAX_DOT // 1024} KiB"


def _check_size(path: Path, what: str) -> None:
    """Refuse (413) a pipeline file too large to parse while others wait."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # reading it says what is wrong
    if size > MAX_DOT:
        raise Problem(413, f"{what} is {size} bytes; {_DOT_LIMIT}")

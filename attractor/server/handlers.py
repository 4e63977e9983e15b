"""The endpoint functions of :mod:`attractor.server.app`.

Errors become JSON ``{"error": "..."}`` with a status that says whose fault it
is: 400 bad request, 403 a path outside the root, 404 unknown run or
question, 409 the run is not in a state for that.
"""

from __future__ import annotations

import dataclasses
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
from attractor.checks import check_pipeline
from attractor.dot.graph import Graph
from attractor.errors import AttractorError, Diagnostic, UsageError, ValidationError
from attractor.fileio.writes import atomic_write_text
from attractor.launch import node_boundaries, node_boundary
from attractor.render import render
from attractor.runview.costs import branches, budgets, node_usage, requests
from attractor.runview.files import manifest_file, pipeline_copy, results_file, worker_of
from attractor.runview.inventory import RunReader, RunState, folder_files, run_graph, stage_path
from attractor.runview.listing import RUNS_SUBDIR, is_run_dir, list_runs, load_checkpoint, run_info
from attractor.runview.prune import delete_runs
from attractor.runview.timeline import timeline
from attractor.server.body import Problem, json_body, json_object
from attractor.server.confine import inside
from attractor.server.failure import failure_of
from attractor.server.gantt import gantt
from attractor.server.output import TERMINALS, stage_file, stage_listing, stage_slice
from attractor.server.prune import prune_ids
from attractor.server.questions import read_changes, stage_diff
from attractor.server.resume import check_resumable, continuation_of
from attractor.server.runs import RunManager
from attractor.server.sse import EventStreamResponse, event_stream
from attractor.settings import environment_redactor

STATIC = Path(__file__).parent / "static"
_RUN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
#: A run id is a directory name: longer ones name no run.
MAX_RUN_ID = 255
#: Where posted DOT text is kept, under the root, so its run can be resumed.
SUBMITTED = Path(".attractor") / "submitted"
#: The largest pipeline a request may start (DOT text, or a file under the root).
MAX_DOT = 1024 * 1024
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
        self._drawer = anyio.CapacityLimiter(1)

    # -- lookup -------------------------------------------------------------

    def run_path(self, request: Request) -> Path:
        return self.path_of(str(request.path_params["id"]))

    def path_of(self, run_id: str) -> Path:
        """The directory of run ``run_id`` under the root.

        Raises:
            Problem: 404 no such run, 403 it leads outside the root.
        """
        if len(run_id) <= MAX_RUN_ID and _RUN_ID.match(run_id):
            path = self.manager.root / RUNS_SUBDIR / run_id
            if is_run_dir(path):
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
        copy = pipeline_copy(path)
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

    def check(self, source: Path) -> tuple[Graph | None, list[Diagnostic]]:
        """The pipeline file ``source`` checked as ``attractor lint`` run in the root
        checks it (its config file too); the diagnostics name files relative to the root."""
        graph, found = check_pipeline(source, cwd=self.manager.root)
        return graph, [_relative(d, self.manager.root) for d in found]

    # -- endpoints ----------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    @_answers
    async def list_runs(self, request: Request) -> Response:
        return JSONResponse({"runs": await self.runs()})

    async def runs(self) -> list[dict[str, Any]]:
        """Every run under the root, newest first, with what this server knows of it."""

        def listing() -> list[dict[str, Any]]:
            return [_with_worker(r.to_json()) for r in list_runs(self.manager.root, top=False)]

        runs = await anyio.to_thread.run_sync(listing)
        return [self._with_activity(r) for r in runs]

    @_answers
    async def start(self, request: Request) -> Response:
        run_id = await self.start_run(await json_body(request))
        return JSONResponse({"id": run_id, "url": f"/pipelines/{run_id}"}, status_code=201)

    async def start_run(self, body: dict[str, Any]) -> str:
        """Start the pipeline ``body`` names (``dot_source`` or ``path``); its run id."""
        settings = json_object(body, "settings")
        seed = json_object(body, "context")

        def prepare() -> tuple[Path, Graph]:  # parsing a large pipeline takes a while
            source = self._source(body)
            graph, found = self.check(source)
            if graph is None or any(d.is_error for d in found):
                raise ValidationError(found)
            return source, graph

        source, graph = await anyio.to_thread.run_sync(prepare, limiter=self._workers)
        return await self.manager.start(graph, source, settings, seed)

    @_answers
    async def status(self, request: Request) -> Response:
        return JSONResponse(await self.status_of(self.run_path(request)))

    async def status_of(self, path: Path) -> dict[str, Any]:
        """The run's state: its listing fields, every node, its questions."""
        graph, state = await self.read_run(path)
        data = await anyio.to_thread.run_sync(_with_spending, path, graph, state, self.manager.root)
        await self._read_changes(path)
        return self._with_activity(data)

    async def _read_changes(self, path: Path) -> None:
        """The diff of the stage before each waiting gate of the run, read once a question."""
        run = self.manager.active.get(path.name)
        for pending in list(run.interviewer.pending.values()) if run else []:
            await read_changes(path, pending)

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
    async def prune(self, request: Request) -> Response:
        body = await json_body(request)
        ids = await anyio.to_thread.run_sync(prune_ids, body, self.manager.root)
        kept: dict[str, str] = {}
        paths: dict[str, Path] = {}
        for run_id in ids:
            try:
                paths[run_id] = self.path_of(run_id)
            except Problem as problem:
                kept[run_id] = str(problem)
        # The worktrees and branches of the deleted runs go with them.
        done = await delete_runs(
            ((run_id, path, run_id in self.manager.active) for run_id, path in paths.items()),
            limiter=self._workers,
        )
        for run_id in done.deleted:
            self._graphs.pop(paths[run_id], None)
            self._readers.pop(paths[run_id], None)
        kept.update(done.kept)
        return JSONResponse({"deleted": done.deleted, "kept": kept, "workspaces": done.workspaces})

    @_answers
    async def cancel(self, request: Request) -> Response:
        path = self.run_path(request)
        await json_body(request, required=False)
        self.cancel_run(path)
        return JSONResponse({"id": path.name, "status": "cancelling"}, status_code=202)

    def cancel_run(self, path: Path) -> None:
        """Cancel the run in ``path`` (409 when this server does not drive it)."""
        if not self.manager.cancel(path.name):
            raise Problem(409, f"run {path.name} is not running in this server")

    @_answers
    async def resume(self, request: Request) -> Response:
        path = self.run_path(request)
        run_id = await self.resume_run(path, await json_body(request, required=False))
        return JSONResponse({"id": run_id, "url": f"/pipelines/{run_id}"})

    async def resume_run(self, path: Path, body: dict[str, Any]) -> str:
        """Continue the run in ``path`` as ``body`` says (``retry_failed``, ``from``)."""
        how = continuation_of(body)
        info = self.manager.ended_by_error(run_info(path).to_json())
        check_resumable(path.name, str(info["status"]), how, path.name in self.manager.active)
        copy = pipeline_copy(path)
        _check_size(copy, f"run {path.name}'s pipeline copy")
        graph = await anyio.to_thread.run_sync(load, copy, limiter=self._workers)
        if how is not None and how.from_node is not None and not graph.has_node(how.from_node):
            raise Problem(400, f'"from": run {path.name} has no node {_shown(how.from_node)}')
        return await self.manager.resume(path, graph, json_object(body, "settings"), how)

    @_answers
    async def graph(self, request: Request) -> Response:
        path = self.run_path(request)
        graph, state = await self.read_run(path)
        if graph is None:
            raise Problem(409, f"run {path.name}: its pipeline.dot copy cannot be read")

        def draw() -> bytes:
            with self._drawing:
                return render(graph, state, "svg")

        # One picture at a time (Graphviz keeps global state), in a thread of its own:
        # a large one never holds the workers that start runs and read stages.
        svg = await anyio.to_thread.run_sync(draw, limiter=self._drawer)
        return Response(svg, media_type="image/svg+xml")

    @_answers
    async def questions(self, request: Request) -> Response:
        path = self.run_path(request)
        await self._read_changes(path)
        run = self.manager.active.get(path.name)
        pending = list(run.interviewer.pending.values()) if run else []
        return JSONResponse({"questions": self.redactor.value([p.to_json() for p in pending])})

    @_answers
    async def answer(self, request: Request) -> Response:
        path = self.run_path(request)
        qid = str(request.path_params["qid"])
        self._waiting(path, qid)
        return JSONResponse(self.answer_question(path, qid, await json_body(request)))

    def _waiting(self, path: Path, qid: str) -> None:
        run = self.manager.active.get(path.name)
        if run is None or qid not in run.interviewer.pending:
            raise Problem(404, f"no question {_shown(qid)} is waiting in run {path.name}")

    def answer_question(self, path: Path, qid: str, body: dict[str, Any]) -> dict[str, Any]:
        """Answer question ``qid`` of the run in ``path``: ``{"answer", "comment"}``."""
        self._waiting(path, qid)
        run = self.manager.active[path.name]
        text = body.get("answer")
        if not isinstance(text, str) or not text.strip():
            raise Problem(400, 'give the answer as {"answer": "KEY or label", "comment": "..."}')
        comment = body.get("comment") or ""
        # The web page and the MCP tools say so; any other client is the API.
        who = body.get("answered_by") if body.get("answered_by") in ("page", "mcp") else "api"
        answer = run.interviewer.answer(qid, text, str(comment), answered_by=str(who))
        # The choice's label, apart from the comment (the event log has both too).
        picked = answer.selected_option
        label = picked.label if picked is not None else text.strip()
        return {
            "id": qid,
            "answer": answer.value,
            "label": label,
            "comment": str(comment).strip(),
            "answered_by": str(who),
        }

    @_answers
    async def checkpoint(self, request: Request) -> Response:
        return JSONResponse((await self._checkpoint(request)).to_json())

    @_answers
    async def context(self, request: Request) -> Response:
        return JSONResponse({"context": (await self._checkpoint(request)).context})

    @_answers
    async def node(self, request: Request) -> Response:
        path = self.run_path(request)
        asked = request.query_params.get("attempt")
        return JSONResponse(await self.node_of(path, str(request.path_params["node"]), asked))

    async def node_of(self, path: Path, node_id: str, asked: str | None = None) -> dict[str, Any]:
        """One node of the run in ``path``: its state and its stage files (of attempt
        ``asked``, ``NODE/vV-aA``, else of the latest)."""
        graph, state = await self.read_run(path)
        if node_id not in state.nodes:
            raise Problem(404, f"run {path.name} has no node {_shown(node_id)}")
        data: dict[str, Any] = {"node": state.nodes[node_id].to_json()}
        if graph is not None and graph.has_node(node_id):
            node = graph.node(node_id)
            data.update(label=node.label, handler=node.handler_type, prompt=node.prompt)
        data.update(
            await anyio.to_thread.run_sync(
                _node_details, path, node_id, asked, limiter=self._workers
            )
        )
        if graph is not None:
            boundary = await anyio.to_thread.run_sync(
                node_boundary, path, graph, node_id, self.manager.root, limiter=self._workers
            )
            if boundary is not None:
                data["boundary"] = boundary
        return self.redactor.value(data)  # type: ignore[no-any-return]  # the prompt too

    @_answers
    async def node_file(self, request: Request) -> Response:
        return await self._node_file(request, str(request.path_params["name"]))

    @_answers
    async def terminal_file(self, request: Request) -> Response:
        """An ACP terminal's output (``files/acp_terminals/term-N.log``)."""
        return await self._node_file(request, f"{TERMINALS}/{request.path_params['name']}")

    async def _node_file(self, request: Request, name: str) -> Response:
        path = self.run_path(request)
        node_id = str(request.path_params["node"])
        _, state = await self.read_run(path)
        if node_id not in state.nodes:
            raise Problem(404, f"run {path.name} has no node {_shown(node_id)}")
        asked = request.query_params.get("attempt")

        def read() -> bytes:
            return stage_file(path, _folder_of(path, node_id, asked), name)

        data = await anyio.to_thread.run_sync(read, limiter=self._workers)
        return Response(self.redactor.data(data), media_type="text/plain; charset=utf-8")

    async def node_file_slice(
        self, path: Path, node_id: str, asked: str | None, name: str, offset: int, limit: int
    ) -> dict[str, Any]:
        """``limit`` bytes of stage file ``name`` of a node (of attempt ``asked``) from
        byte ``offset``, as text: ``text``, ``size``, ``next_offset`` (None at the end)."""
        _, state = await self.read_run(path)
        if node_id not in state.nodes:
            raise Problem(404, f"run {path.name} has no node {_shown(node_id)}")

        def read() -> tuple[str, bytes, int, int]:
            folder = _folder_of(path, node_id, asked)
            data, size, after = stage_slice(path, folder, name, offset, limit, self.redactor.text)
            return folder.relative_to(path).as_posix(), data, size, after

        files_of, data, size, after = await anyio.to_thread.run_sync(read, limiter=self._workers)
        return {
            "node": node_id,
            "files_of": files_of,
            "file": name,
            "offset": offset,
            "size": size,
            "next_offset": after if after < size else None,
            "text": data.decode("utf-8", errors="replace"),  # redacted whole, then cut
        }

    @_answers
    async def run_timeline(self, request: Request) -> Response:
        path = self.run_path(request)
        return JSONResponse(self.redactor.value(await anyio.to_thread.run_sync(gantt, path)))

    @_answers
    async def node_diff(self, request: Request) -> Response:
        """What the stage changed in the run's workspace: the diff and its ``--stat``."""
        path = self.run_path(request)
        node_id = str(request.path_params["node"])
        try:
            data = await stage_diff(path, node_id)
        except UsageError as err:
            raise Problem(404, str(err)) from None
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


def _node_details(path: Path, node_id: str, asked: str | None) -> dict[str, Any]:
    """A node's attempts, the files of the one ``asked`` for (else its latest),
    what it spent and each of its model requests."""
    attempts = [a.to_json() for a in timeline(path) if a.node == node_id]
    folder = _attempt_folder(path, node_id, asked, attempts)
    return {
        "attempts": attempts,
        "files_of": folder.relative_to(path).as_posix(),
        "files": folder_files(folder),
        "listing": stage_listing(path, folder),
        "usage": node_usage(path).get(node_id),
        "requests": requests(path, node_id),
    }


def _folder_of(path: Path, node_id: str, asked: str | None) -> Path:
    """:func:`_attempt_folder` of the node's attempts as the run's timeline tells them."""
    attempts = [a.to_json() for a in timeline(path) if a.node == node_id] if asked else []
    return _attempt_folder(path, node_id, asked, attempts)


def _attempt_folder(
    path: Path, node_id: str, asked: str | None, attempts: list[dict[str, Any]]
) -> Path:
    """The folder whose files the node request asks for (``?attempt=NODE/v1-a2``).

    Only the folders the timeline names for the node may be asked for; without
    the parameter, the node's own folder (its latest attempt).
    """
    if asked is None:
        return stage_path(path, node_id)
    if asked not in {a["files"] for a in attempts}:
        raise Problem(404, f"node {_shown(node_id)} has no attempt folder {_shown(asked)}")
    return path / asked


def _relative(diagnostic: Diagnostic, root: Path) -> Diagnostic:
    """``diagnostic`` naming its file relative to ``root`` (a file under it)."""
    file = Path(diagnostic.file)
    top = root.resolve()
    if file.is_absolute() and file.is_relative_to(top):
        return dataclasses.replace(diagnostic, file=file.relative_to(top).as_posix())
    return diagnostic


def _shown(name: str) -> str:
    """A name from the URL for a message: quoted, and cut when long."""
    return repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name)} characters)"


def _with_spending(path: Path, graph: Graph | None, state: RunState, root: Path) -> dict[str, Any]:
    """A run's state with what each node and branch spent and the run's budgets
    (the steps' boundaries planned with the config file of the server's ``root``)."""
    data = _with_worker(state.to_json())
    spent = node_usage(path)
    for node_id, node in data["nodes"].items():
        node["usage"] = spent.get(node_id)
    if graph is not None:
        ran = [node_id for node_id, node in data["nodes"].items() if node.get("visits")]
        for node_id, boundary in _boundaries(path, graph, ran, root).items():
            if node_id in data["nodes"]:
                data["nodes"][node_id]["boundary"] = boundary
    data["branches"] = branches(graph, spent)
    data["budgets"] = budgets(path, state.info)
    data["failure"] = failure_of(path, state.info)
    return data


#: Each run's step boundaries, kept while its results and manifest stay the same
#: (the page polls the run; a step records its boundary as it ends).
_BOUNDARIES: dict[Path, tuple[tuple[Any, ...], dict[str, str | None]]] = {}
_BOUNDARIES_KEPT = 64


def _boundaries(path: Path, graph: Graph, ran: list[str], root: Path) -> dict[str, str | None]:
    """Every node's boundary (:func:`node_boundaries`), computed again only once the
    run's results.jsonl or manifest changed, or another node ran."""
    key = (_stat(results_file(path)), _stat(manifest_file(path)), tuple(ran))
    kept = _BOUNDARIES.get(path)
    if kept is not None and kept[0] == key:
        return kept[1]
    found = node_boundaries(path, graph, ran, root)
    if len(_BOUNDARIES) >= _BOUNDARIES_KEPT:
        _BOUNDARIES.clear()
    _BOUNDARIES[path] = (key, found)
    return found


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


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

"""File writes that a crash cannot leave half done, and reads that cannot hang or explode.

Writes (:mod:`~attractor.fileio.writes`): :func:`~.writes.atomic_write_text`
and :func:`~.writes.atomic_write_json` for state a resume depends on,
:func:`~.writes.write_text` and :func:`~.writes.append_text` for stage files,
:class:`~.writes.AppendFile` for JSON lines. Inside a run, each of them takes
the run's secrets out of what it writes first (:mod:`attractor.redact`).
Everything in a run directory is created with :func:`~.writes.run_file_mode`
and :func:`~.writes.run_dir_mode` (private to the user unless
``run_permissions = "umask"``); a file meant for the user
(:data:`~.writes.USER_FILE`) follows the umask.

Reads (:mod:`~attractor.fileio.reads`): every file attractor reads on a user's
behalf (pipeline, config file, answers file, checkpoint, manifest, results)
goes through :func:`~.reads.read_bounded`: it must be a regular file (a FIFO or
``/dev/zero`` would block or never end) no larger than a limit no real file
comes near. Problems are :class:`~attractor.errors.InputFileError`, which
callers turn into their own errors. Files of a run directory that grow
(``journal.jsonl``, ``events.jsonl``, ``results.jsonl``) are streamed by
:func:`~.reads.read_lines`, one line in memory at a time, with a cap per line
and in total; stage files are read in part by :func:`~.reads.read_head` and
:func:`~.reads.read_tail`. All of them go through
:func:`~.reads.open_regular`: O_NONBLOCK, then fstat, so nothing but a regular
file is ever read.

JSON (:mod:`~attractor.fileio.jsonio`): what is read back goes through
:func:`~.jsonio.loads_json`, which refuses nesting deeper than
:data:`~.jsonio.MAX_JSON_DEPTH` before the recursive parser (and the code that
walks the result) sees it; what the engine writes per node or event is encoded
by :data:`~.jsonio.dumps` and :data:`~.jsonio.dumps_compact`, built once.

Paths a pipeline names (``human.show``, a child pipeline, a ``workdir``) go
through :func:`~.confine.confine_path` and :func:`~.confine.read_confined_text`
(:mod:`~attractor.fileio.confine`): resolved, symbolic links followed, and
refused outside the places a run may read
(:class:`~attractor.errors.PipelinePathError`).
"""

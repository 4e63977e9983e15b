"""File operations on this machine, confined beneath a working directory, by descriptor.

The execution environments that see the host's files (local, the bubblewrap
sandbox, a container with the workdir mounted at its own path) answer their file
operations here (:class:`~attractor.proc.hostfs.ops.HostFiles`); the agent's file
tools reach them only through the environment (:mod:`attractor.proc.environment`).
"""

#: Lines the ``read_file`` tool returns when the model names no limit.
DEFAULT_READ_LIMIT = 2000
#: The largest file read whole through an environment's ``read_file`` by default.
READ_FILE_LIMIT = 16 * 1024 * 1024

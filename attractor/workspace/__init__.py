"""The run's workspace: the files its stages change, checkpointed with git.

- :mod:`~attractor.workspace.preflight`: which mode a run gets (``worktree``,
  ``snapshot``, ``none``) and the checks made before anything runs.
- :mod:`~attractor.workspace.create`: making a worktree or a snapshot git directory.
- :mod:`~attractor.workspace.workspace`: checkpoint and restore while the run goes.
- :mod:`~attractor.workspace.commits`: one checkpoint commit, with trailers.
- :mod:`~attractor.workspace.git`: the one way git is run (real subprocesses, anyio).

It sits below the engine and knows nothing of it: the engine calls it with
plain values (paths, node names, commits).
"""

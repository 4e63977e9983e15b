"""The names a workspace gives its files in a run directory and a project.

Plain values with no imports, so that the run store can name them without
loading the workspace's git machinery (a run with ``--workspace none`` and the
read side never load it).
"""

from __future__ import annotations

#: The git directory of a snapshot workspace, inside the run directory.
SNAPSHOT_GIT_DIR = "workspace.git"
#: The copy of the user's index the start commit is made with, in the run directory.
CHECKOUT_INDEX = ".checkout-index"
#: Where a workspace_setup command's output goes, in the run directory.
SETUP_LOG = "workspace-setup.log"
#: attractor's own folder in a project (run directories): never part of a checkpoint.
OWN_FOLDER = ".attractor"
#: The prefix of every trailer key the run writes (``git log --grep Attractor-Run:``).
TRAILER = "Attractor"
#: The context keys of the commit the next stage starts from (the last checkpoint), and
#: of the one the stage in progress started from (``--retry-failed`` goes back to it).
COMMIT_KEY = "internal.workspace.commit"
START_KEY = "internal.workspace.start"

"""The run store: what a run keeps on disk (journal, checkpoint, run directory,
stage status files, attempt folders) and reads back on resume."""

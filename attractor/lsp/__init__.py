"""``attractor lsp``: a language server for pipelines, built on the linter.

Imported only by the ``lsp`` command (it needs ``pygls``, the ``lsp`` extra), so
``attractor lint`` and ``import attractor`` never load it. ``text`` reads the
document around a cursor, ``analysis`` lints a document (and its child
pipelines), and ``fixes``, ``complete``, ``hover``, ``navigate`` and ``fmt``
answer one kind of request each; ``server`` wires them to the protocol.
"""

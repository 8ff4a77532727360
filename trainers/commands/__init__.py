"""The ``colbench`` subcommands of the trainers part: ``collect`` and ``train``.

They reach the CLI through the entry-point group ``colbench.commands`` (see
:mod:`colbench.cli.contributed_commands`). Building their parsers imports neither TRL nor
torch, so both show in ``colbench --help`` without ``colbench[train]``; running ``train``
without it exits 2 with the one-line install hint.
"""

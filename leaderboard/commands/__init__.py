"""The ``colbench`` subcommands of the leaderboard part: ``submit`` (the client, which needs
no extra) and ``leaderboard`` (the server, which needs ``colbench[leaderboard]``).

They reach the CLI through the entry-point group ``colbench.commands`` (see
:mod:`colbench.cli.contributed_commands`). Building their parsers imports no server module,
so both show in ``colbench --help`` without the extra; running a server action without it
exits 2 with the one-line install hint.
"""

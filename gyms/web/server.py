"""Run one site in its own process: ``python -m colbench.gyms.web.server --site shop --db F``.

The process binds a free loopback port, prints ``LISTENING <port>`` on stdout and serves until
its stdin closes (so it never outlives the env that started it) or it is killed. The signing
secret comes from the ``COLBENCH_SITE_SECRET`` environment variable, not the command line.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading

from colbench.gyms.web.sites import SITE_NAMES, site_module


def _exit_when_parent_goes() -> None:
    # The env holds our stdin open; EOF means it closed us or died.
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--site", required=True, choices=SITE_NAMES)
    parser.add_argument("--db", required=True, help="the site's SQLite file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    secret = os.environ.get("COLBENCH_SITE_SECRET", "")
    if not secret:
        parser.error("COLBENCH_SITE_SECRET must be set")

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = site_module(args.site, "app").create_app(args.db, secret)
    server = make_server(args.host, args.port, app, threaded=True)
    print(f"LISTENING {server.port}", flush=True)
    # Nothing else goes to stdout: the parent stops reading it after the first line.
    sys.stdout = sys.stderr
    threading.Thread(target=_exit_when_parent_goes, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()

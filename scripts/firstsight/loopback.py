"""What model.py and receiver.py share: the port options and the serving loop on 127.0.0.1."""

import argparse
from http.server import ThreadingHTTPServer


def parser(doc):
    """An argument parser with --port and --port-file."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", help="write the port here once listening")
    return p


def serve(handler, args):
    """Serves `handler` on 127.0.0.1 until interrupted, telling the port first."""
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file, "w", encoding="utf-8") as f:
            f.write(str(port))
    print(f"port {port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0

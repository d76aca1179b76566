#!/usr/bin/env python3
"""An OTLP/HTTP receiver on 127.0.0.1 for first-sight runs (docs/first-sight.md).

Takes /v1/traces and /v1/logs (under any prefix) (protobuf or JSON, gzip or not) and appends each
export request as one OTLP/JSON line to <out>/spans.jsonl or <out>/logs.jsonl,
the form `toolscore inspect` reads. Metrics are accepted and dropped.

    python3 receiver.py --out DIR [--port 0] [--port-file FILE]

prints `port N` once listening. Needs opentelemetry-proto and protobuf.
"""

import gzip
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

import loopback

KINDS = {
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest,
                   trace_service_pb2.ExportTraceServiceResponse, "spans.jsonl"),
    "/v1/logs": (logs_service_pb2.ExportLogsServiceRequest,
                 logs_service_pb2.ExportLogsServiceResponse, "logs.jsonl"),
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    out = "."
    lock = threading.Lock()

    def log_message(self, *_):
        pass

    def reply(self, status, body, ctype):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        # OpenLIT's JS exporter sends chunked bodies, without a Content-Length.
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b""
        while True:
            size = int(self.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                self.rfile.readline()
                return body
            body += self.rfile.read(size)
            self.rfile.readline()

    def do_POST(self):
        body = self.read_body()
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        # Langfuse's exporters post to /api/public/otel/v1/traces.
        path = "/v1/" + self.path.split("?")[0].rstrip("/").rsplit("/v1/", 1)[-1]
        is_json = "json" in self.headers.get("Content-Type", "")
        if path not in KINDS:
            # Metrics and anything else: accepted, not kept.
            self.reply(200, b"{}" if is_json else b"", self.headers.get("Content-Type", ""))
            return
        req_type, resp_type, name = KINDS[path]
        req = req_type()
        try:
            if is_json:
                json_format.Parse(body, req, ignore_unknown_fields=True)
            else:
                req.ParseFromString(body)
        except Exception as e:  # a malformed export is reported, not kept
            print(f"receiver: bad {path} request: {e}", file=sys.stderr, flush=True)
            self.reply(400, str(e).encode(), "text/plain")
            return
        line = json_format.MessageToJson(req, indent=None)
        with self.lock, open(os.path.join(self.out, name), "a", encoding="utf-8") as f:
            f.write(line + "\n")
        if is_json:
            self.reply(200, b"{}", "application/json")
        else:
            self.reply(200, resp_type().SerializeToString(), "application/x-protobuf")


def main():
    p = loopback.parser(__doc__)
    p.add_argument("--out", required=True, help="folder for spans.jsonl and logs.jsonl")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    Handler.out = a.out
    return loopback.serve(Handler, a)


if __name__ == "__main__":
    sys.exit(main())

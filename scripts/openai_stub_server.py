#!/usr/bin/env python3
"""A small OpenAI-compatible streaming server for testing benchmark plumbing (Python stdlib only).

It serves /v1/models, /health, /v1/chat/completions and /v1/completions. A generation streams
exactly the requested number of output tokens (`max_completion_tokens`, else `max_tokens`, else
16) as server-sent events, one stub token (" tok") per chunk, then a usage chunk when the client
asks for one, then `data: [DONE]`. It measures nothing and models no GPU: `dynosim deploy`'s tests
use it to check that AIPerf sends the workload dynosim simulated (count and lengths), not speed.

Usage: openai_stub_server.py [--host 127.0.0.1] [--port 0] [--port-file FILE] [--model NAME]
With --port 0 the OS picks a free port; --port-file receives it once the server listens.
"""

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STUB_TOKEN = " tok"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model = "stub-model"

    def log_message(self, fmt, *args):  # quiet: the test reads AIPerf's records, not this log
        pass

    def _send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/v1/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": self.model, "object": "model", "created": 0, "owned_by": "stub"}]})
        elif self.path.startswith("/health"):
            self._send_json(200, {"status": "healthy"})
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": "bad json"})
            return
        chat = self.path.startswith("/v1/chat/completions")
        if not chat and not self.path.startswith("/v1/completions"):
            self._send_json(404, {"error": "not found"})
            return
        n = req.get("max_completion_tokens") or req.get("max_tokens") or 16
        n = max(int(n), 1)
        want_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        if not req.get("stream"):
            text = STUB_TOKEN * n
            choice = ({"index": 0, "message": {"role": "assistant", "content": text},
                       "finish_reason": "length"} if chat else
                      {"index": 0, "text": text, "finish_reason": "length"})
            self._send_json(200, {"id": "stub", "object": "chat.completion" if chat else
                                  "text_completion", "created": int(time.time()),
                                  "model": self.model, "choices": [choice],
                                  "usage": {"prompt_tokens": 0, "completion_tokens": n,
                                            "total_tokens": n}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        try:
            for i in range(n):
                last = i == n - 1
                if chat:
                    delta = {"content": STUB_TOKEN}
                    if i == 0:
                        delta["role"] = "assistant"
                    choice = {"index": 0, "delta": delta,
                              "finish_reason": "length" if last else None}
                else:
                    choice = {"index": 0, "text": STUB_TOKEN,
                              "finish_reason": "length" if last else None}
                chunk = {"id": "stub", "object": obj, "created": created,
                         "model": self.model, "choices": [choice]}
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            if want_usage:
                chunk = {"id": "stub", "object": obj, "created": created, "model": self.model,
                         "choices": [], "usage": {"prompt_tokens": 0, "completion_tokens": n,
                                                  "total_tokens": n}}
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--model", default="stub-model")
    args = ap.parse_args()
    Handler.model = args.model
    # The listen backlog must hold a fixed schedule's burst: with http.server's default of 5,
    # connections beyond it were reset ("Connection reset by peer" in AIPerf's records).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        import os
        os.replace(tmp, args.port_file)
    print(f"listening on http://{args.host}:{port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

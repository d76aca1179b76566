#!/usr/bin/env python3
"""A scripted model on 127.0.0.1 for first-sight runs (docs/first-sight.md).

Serves the OpenAI chat completions, OpenAI Responses and Anthropic Messages
wires, streamed or not. The script is a JSON file: {"turns": [...]}, each turn
either {"tool_calls": [{"name": ..., "arguments": {...}}, ...]} or
{"text": "..."}. Every request that offers tools takes the next turn; a
request without tools (a title, a summary) gets a plain text answer and takes
none. Once the turns run out, the answer is the text "done".

    python3 model.py --script script.json [--port 0] [--port-file FILE]

prints `port N` on stdout once listening. Standard library only.
"""

import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

import loopback


class Script:
    """The turns, served in order to requests that offer tools."""

    def __init__(self, turns):
        self.turns = list(turns)
        self.at = 0
        self.lock = threading.Lock()
        self.ids = itertools.count(1)

    def next(self, offers_tools):
        with self.lock:
            # Each answer has its own id: LangGraph keys messages by it.
            n = next(self.ids)
            if not offers_tools or self.at >= len(self.turns):
                return {"text": "done", "rid": f"script{n}"}
            turn = self.turns[self.at]
            self.at += 1
            calls = [
                {
                    "id": f"call_m{n}_{i}",
                    "name": c["name"],
                    "arguments": json.dumps(c.get("arguments", {})),
                }
                for i, c in enumerate(turn.get("tool_calls", []))
            ]
            return {"text": turn.get("text"), "calls": calls, "rid": f"script{n}"}


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def chat_message(answer):
    msg = {"role": "assistant", "content": answer.get("text")}
    if answer.get("calls"):
        msg["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in answer["calls"]
        ]
    return msg


def chat_completion(model, answer):
    finish = "tool_calls" if answer.get("calls") else "stop"
    return {
        "id": "chatcmpl-" + answer["rid"],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": chat_message(answer), "finish_reason": finish}],
        "usage": USAGE,
    }


def chat_chunks(model, answer, with_usage):
    base = {"id": "chatcmpl-" + answer["rid"], "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def chunk(delta, finish=None):
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    yield chunk({"role": "assistant", "content": ""})
    if answer.get("text"):
        yield chunk({"content": answer["text"]})
    for i, c in enumerate(answer.get("calls") or []):
        yield chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                     "function": {"name": c["name"], "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": i, "function": {"arguments": c["arguments"]}}]})
    yield chunk({}, "tool_calls" if answer.get("calls") else "stop")
    if with_usage:
        yield dict(base, choices=[], usage=USAGE)


def response_items(answer):
    items = []
    if answer.get("text") or not answer.get("calls"):
        items.append({"type": "message", "id": "msg_" + answer["rid"], "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": answer.get("text") or "",
                                   "annotations": []}]})
    for c in answer.get("calls") or []:
        items.append({"type": "function_call", "id": "fc_" + c["id"], "call_id": c["id"],
                      "name": c["name"], "arguments": c["arguments"], "status": "completed"})
    return items


def response(model, answer):
    return {"id": "resp_" + answer["rid"], "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": model, "output": response_items(answer),
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def response_events(model, answer):
    """The Responses API's stream: each item added empty, then its text or
    arguments as deltas (SDKs that build calls from the deltas, such as
    Strands, see them), then done."""
    full = response(model, answer)
    start = dict(full, status="in_progress", output=[])
    events = [("response.created", {"response": start}),
              ("response.in_progress", {"response": start})]
    for i, item in enumerate(full["output"]):
        at = {"output_index": i, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            events += [
                ("response.output_item.added",
                 {"output_index": i, "item": dict(item, status="in_progress", content=[])}),
                ("response.content_part.added", dict(at, content_index=0, part=part)),
                ("response.output_text.delta", dict(at, content_index=0, delta=text)),
                ("response.output_text.done", dict(at, content_index=0, text=text)),
                ("response.content_part.done",
                 dict(at, content_index=0, part=dict(part, text=text))),
            ]
        else:
            events += [
                ("response.output_item.added",
                 {"output_index": i, "item": dict(item, status="in_progress", arguments="")}),
                ("response.function_call_arguments.delta", dict(at, delta=item["arguments"])),
                ("response.function_call_arguments.done", dict(at, arguments=item["arguments"])),
            ]
        events.append(("response.output_item.done", {"output_index": i, "item": item}))
    events.append(("response.completed", {"response": full}))
    for n, (kind, body) in enumerate(events):
        yield kind, dict(body, type=kind, sequence_number=n)


def anthropic_content(answer):
    blocks = []
    if answer.get("text"):
        blocks.append({"type": "text", "text": answer["text"]})
    for c in answer.get("calls") or []:
        blocks.append({"type": "tool_use", "id": "toolu_" + c["id"], "name": c["name"],
                       "input": json.loads(c["arguments"])})
    if not blocks:
        blocks.append({"type": "text", "text": "done"})
    return blocks


def anthropic_message(model, answer):
    stop = "tool_use" if answer.get("calls") else "end_turn"
    return {"id": "msg_" + answer["rid"], "type": "message", "role": "assistant", "model": model,
            "content": anthropic_content(answer), "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 7}}


def anthropic_events(model, answer):
    full = anthropic_message(model, answer)
    yield "message_start", {"type": "message_start",
                            "message": dict(full, content=[], stop_reason=None)}
    for i, b in enumerate(full["content"]):
        if b["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                          "delta": {"type": "text_delta", "text": b["text"]}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": dict(b, input={})}
            yield "content_block_delta", {
                "type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": 7}}
    yield "message_stop", {"type": "message_stop"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script = None
    log = None

    def log_message(self, *_):
        pass

    def send_json(self, body, status=200):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event, data in events:
            head = f"event: {event}\n" if event else ""
            text = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write(f"{head}data: {text}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": "script-model", "object": "model"}]})
        else:
            self.send_json({"error": "not found"}, 404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self.send_json({"error": "bad json"}, 400)
            return
        if self.log:
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": self.path, "request": req}) + "\n")
        model = req.get("model", "script-model")
        answer = self.script.next(bool(req.get("tools")))
        stream = bool(req.get("stream"))
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/chat/completions"):
            if stream:
                usage = bool((req.get("stream_options") or {}).get("include_usage"))
                chunks = chat_chunks(model, answer, usage)
                self.send_sse([(None, c) for c in chunks] + [(None, "[DONE]")])
            else:
                self.send_json(chat_completion(model, answer))
        elif path.endswith("/responses"):
            if stream:
                self.send_sse(response_events(model, answer))
            else:
                self.send_json(response(model, answer))
        elif path.endswith("/messages"):
            if stream:
                self.send_sse(anthropic_events(model, answer))
            else:
                self.send_json(anthropic_message(model, answer))
        else:
            self.send_json({"error": f"unknown path {self.path}"}, 404)


def main():
    p = loopback.parser(__doc__)
    p.add_argument("--script", required=True, help="JSON file: {\"turns\": [...]}")
    p.add_argument("--log", help="append each request as a JSON line here")
    a = p.parse_args()
    with open(a.script, encoding="utf-8") as f:
        Handler.script = Script(json.load(f)["turns"])
    Handler.log = a.log
    return loopback.serve(Handler, a)


if __name__ == "__main__":
    sys.exit(main())

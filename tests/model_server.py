"""A local model server at the network edge, as llama.cpp's `llama-server`
with one slot behaves: an OpenAI-compatible POST /v1/chat/completions on
127.0.0.1 that serves one request at a time (a second one waits for the
first to finish generating, whether or not its client is still there).

How it answers is its `behaviour`, one of
  answer        a usable JSON answer for the kind of call
  prose         text that ignores the JSON format asked for
  hang          generation that runs until `release` is set (or a minute):
                past any client's timeout, holding the server meanwhile
  slow_start    `delay` seconds before the first token, then a usable answer
  no_schema     HTTP 400 naming response_format when a request carries it,
                else a usable answer
  json_object   as llama-cpp-python's server: HTTP 500 with its validation
                error for response_format json_schema; a usable answer for
                json_object with the schema beside it
  sloppy        a usable answer's JSON, fenced and with a trailing comma
Each request's body is kept (`bodies`), with the kind of call it was."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# what a usable answer of each kind is; the kind is the schema's name, or read from the prompt
ANSWERS = {
    "plan": {"search_summary": {"interpreted_topic": "solar panels and battery storage",
                                "key_dimensions": ["solar panel efficiency", "battery storage"]},
             "academic_queries": ["solar panel efficiency"], "news_queries": ["battery storage"],
             "web_queries": ["solar panel efficiency"], "library_queries": ["solar panel efficiency"]},
    "screen": {"irrelevant": []},
    "review": {"reviews": []},
    "synthesis": {"answer": [], "synthesized_insights": [], "key_data_points": [], "contradictions_or_gaps": []},
    "model": {"modelType": "causal_graph", "coreDrivers": [], "relationships": [], "scenarios": [], "metrics": []},
}
PROMPT_WORDS = {"You plan literature": "plan", "You screen search results": "screen", "You review sources": "review",
                "research synthesis agent": "synthesis", "modeling agent": "model"}
USAGE = {"prompt_tokens": 210, "completion_tokens": 90, "total_tokens": 300}


def kind_of(body: dict) -> str | None:
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    if schema.get("name"):
        return schema["name"]
    system = body["messages"][0]["content"]
    return next((kind for words, kind in PROMPT_WORDS.items() if words in system), None)


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, behaviour: str = "answer", delay: float = 0.0):
        self.behaviour, self.delay = behaviour, delay
        self.bodies: list[dict] = []
        self.release = threading.Event()
        self.generating = threading.Lock()  # one request at a time
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def kinds(self) -> list[str | None]:
        return [kind_of(body) for body in self.bodies]

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()

    def __enter__(self) -> "ModelServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.bodies.append(body)
        with self.server.generating:
            status, doc = self.generate(body)
        try:
            self.reply(status, doc)
        except OSError:  # the client gave up long ago
            pass

    def generate(self, body: dict) -> tuple[int, dict]:
        behaviour = self.server.behaviour
        if behaviour == "hang":
            self.server.release.wait(60)
            return 200, completion("…" * 1000)
        if behaviour == "no_schema" and "response_format" in body:
            return 400, {"error": {"message": "response_format: json_schema is not supported by this server",
                                   "type": "invalid_request_error"}}
        if behaviour == "json_object" and body.get("response_format", {}).get("type") == "json_schema":
            return 500, {"error": {"message": "1 validation error: {'type': 'literal_error', 'loc': ('body', "
                                              "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                                              "'json_object'\", 'input': 'json_schema'}", "type": "internal_server_error"}}
        if behaviour == "slow_start":
            time.sleep(self.server.delay)
        if behaviour == "prose":
            return 200, completion("Solar panels are an interesting topic. Let me tell you about the sun, "
                                   "which is a star, and about batteries, which store energy.")
        if behaviour == "sloppy":  # a small model's JSON: fenced, with a trailing comma
            return 200, completion("```json\n" + json.dumps(ANSWERS[kind_of(body)])[:-1] + ",}\n```")
        return 200, completion(json.dumps(ANSWERS[kind_of(body)]))

    def reply(self, status: int, doc: dict) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def completion(content: str) -> dict:
    return {"id": "chatcmpl-local", "object": "chat.completion", "model": "local-270m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": USAGE}

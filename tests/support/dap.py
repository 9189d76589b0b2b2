"""A Debug Adapter Protocol client over a child's stdin/stdout (Content-Length framing), as
an editor drives an adapter: requests wait for their response; events are kept in order
for `wait_event`."""

import json
import queue
import subprocess
import threading
import time


class DapError(Exception):
    pass


class DapClient:
    def __init__(self, argv, env=None, cwd=None):
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
        )
        self.seq = 0
        self.responses = {}
        self.events = queue.Queue()
        self.seen_events = []
        self.condition = threading.Condition()
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self):
        for line in self.process.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def _read(self):
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.events.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length" and value.strip().isdigit():
                    length = int(value)
            if length is None:
                # The adapter went away in the middle of a header (killed by a test).
                self.events.put(None)
                return
            body = stream.read(length)
            if len(body) < length:
                # The adapter went away in the middle of a message.
                self.events.put(None)
                return
            message = json.loads(body)
            if message.get("type") == "response":
                with self.condition:
                    self.responses[message["request_seq"]] = message
                    self.condition.notify_all()
            elif message.get("type") == "event":
                self.events.put(message)
            elif message.get("type") == "request":
                # Reverse requests (runInTerminal, startDebugging): refuse them.
                self._send({"type": "response", "request_seq": message["seq"], "success": False, "command": message["command"]})

    def _send(self, message):
        self.seq += 1
        message["seq"] = self.seq
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return self.seq

    def send(self, command, arguments=None):
        """Sends a request; its seq."""
        return self._send({"type": "request", "command": command, "arguments": arguments or {}})

    def response(self, seq, timeout=60):
        deadline = time.monotonic() + timeout
        with self.condition:
            while seq not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None and seq not in self.responses:
                    raise DapError("no response to request %d; stderr: %s" % (seq, "".join(self.stderr)))
                self.condition.wait(min(left, 0.5))
            return self.responses.pop(seq)

    def request(self, command, arguments=None, timeout=60):
        """The response's body; DapError if it failed."""
        reply = self.response(self.send(command, arguments), timeout)
        if not reply.get("success"):
            raise DapError("%s failed: %s" % (command, reply.get("message") or reply.get("body")))
        return reply.get("body") or {}

    def wait_event(self, name, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DapError("no %s event; saw %s" % (name, [event["event"] for event in self.seen_events]))
            try:
                event = self.events.get(timeout=left)
            except queue.Empty:
                continue
            if event is None:
                raise DapError("the adapter ended before a %s event; stderr: %s" % (name, "".join(self.stderr)))
            self.seen_events.append(event)
            if event["event"] == name:
                return event

    def close(self, timeout=30):
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

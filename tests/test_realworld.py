"""Real tokio programs published on crates.io and written by others, built as their authors
build them (tests/support/realworld.py), driven by real clients (tests/support/clients.py)
into stuck states: connections idle and mid-request, subscriptions, proxied streams,
stalled uploads and downloads, queries waiting on a nameserver that never answers. Each
stuck program is read attached in LLDB 19, LLDB 14 and GDB; then GDB delivers SIGABRT and
the kernel's core is read in each.

Every report must be whole (no errors, no opaque leaf: a `future` node with no children),
every task must reach the program's own code, the waits a user would name must be exact
(the program's own async fns at their lines, the socket's fd as /proc shows it, the
channel), and the trees must be the same in every debugger, live and from the core.

REALWORLD selects the programs (space-separated names, or `all`) and REALWORLD_PROFILES
their builds (`dev`, `release`): `make test` runs bore in release, `make test-realworld`
all of them in both; REALWORLD_OUTPUTS=DIR also writes GDB's JSON and text of each stuck
state to DIR/<program>-<profile>-<scenario>.{json,txt}."""

import fcntl
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import time
from contextlib import ExitStack, contextmanager

import pytest
from support import clients, realworld
from support.debuggers import LLDB_14, Gdb, Lldb, allow_core_dumps, capture
from test_kernel_cores import core_memory_source, core_stack_source, differences, pop_sources, wait_for_core, without_clock

COROUTINES = ("async_fn", "async_block", "async_closure")
JSON_COMMAND = "async backtrace all --json"
TEXT_COMMAND = "async backtrace all"


# ---------------------------------------------------------------------------------------
# Reading a report


def walk(node):
    yield node
    for child in node["children"]:
        yield from walk(child)


def paths(node):
    """Every root-to-leaf path."""
    if not node["children"]:
        return [[node]]
    return [[node] + below for child in node["children"] for below in paths(child)]


def trees(report):
    """Every tree of the report: each task's, each thread's future and block_on future,
    with a name for messages."""
    for task in report["tasks"]:
        yield "task %d" % task["id"], task["root"]
    for thread in report["threads"]:
        for key in ("future", "block_on_future"):
            if thread.get(key):
                yield "thread %d %s" % (thread["tid"], key), thread[key]


def opaque_leaves(report):
    """Futures no decoder knew and that hold no future the search could find: the chain
    ends in a type name, not in what the task waits for. A finished combinator (a `future`
    node with a `state`, as a terminated Fuse) was decoded: it is not one."""
    return ["%s: %s" % (where, node["type"]) for where, root in trees(report) for node in walk(root)
            if node["kind"] == "future" and not node["children"] and not (node.get("detail") or {}).get("state")]


def own_frames(path, program):
    """The program's own coroutines on a path, as (function, file, line): the handler a
    user would name, and where it waits."""
    return tuple(
        (node["function"], node["location"]["file"] if node["location"] else None,
         node["location"]["line"] if node["location"] else None)
        for node in path if node["kind"] in COROUTINES and is_own(node["function"], program)
    )


def is_own(function, program):
    return function is not None and function.lstrip("<").startswith(program.own_code)


NO_FD = -1


def leaf_waits(node):
    """What a path's leaf waits for, as a user names it: a socket by its fd, interest and
    operation; each direction of a copy by the fds it copies from and to and what it waits
    to do; a channel by its kind (told apart by address where it matters)."""
    detail = node.get("detail")
    if node["kind"] == "io_readiness":
        # No fd (an in-memory duplex stream) sorts as -1.
        fd = NO_FD if detail["fd"] is None else detail["fd"]
        return [("io_readiness", fd, tuple(detail["interest"]), detail["operation"])]
    if node["kind"] == "signal_recv":
        return [("signal_recv", detail["name"])]
    if node["kind"] == "join_handle":
        return [("join_handle", detail["task_id"])]
    if node["kind"] == "io_copy_bidirectional":
        return [("copy", detail["a_fd"], detail["b_fd"], detail["a_to_b"]["waiting"]),
                ("copy", detail["b_fd"], detail["a_fd"], detail["b_to_a"]["waiting"])]
    return [(node["kind"],)]


def waits(root, program):
    """A tree as the sorted list of what its paths wait for, each (own frames, wait)."""
    return sorted((own_frames(path, program), wait) for path in paths(root) for wait in leaf_waits(path[-1]))


def describe(root, depth=0):
    """A tree in a few lines, for assertion messages."""
    name = root["function"] or root["type"]
    line = "%s%s %s" % ("  " * depth, root["kind"], name)
    if root["location"]:
        line += " @%s:%d" % (root["location"]["file"], root["location"]["line"])
    if root.get("summary"):
        line += " [%s]" % root["summary"]
    if root.get("error"):
        line += " ERROR %s" % root["error"]
    return "\n".join([line] + [describe(child, depth + 1) for child in root["children"]])


def describe_all(report):
    return "\n".join("%s:\n%s" % (where, describe(root)) for where, root in trees(report))


def source_line(program, relative, text, after=None):
    """The line of the program's source file that holds `text` (exactly one does, or the
    first after the one line holding `after`): the expectations name the author's code,
    not line numbers that a new version would move. `relative` is in the program's crate,
    or starts with realworld.crate_directory for a crate of its lock."""
    with open(realworld.source_file(program, relative)) as source:
        lines = list(enumerate(source, start=1))
    if after is not None:
        start = source_line(program, relative, after)
        return next(number for number, line in lines if number > start and text in line)
    found = [number for number, line in lines if text in line]
    if len(found) > 1:
        found = [number for number, line in lines if line.strip() == text]
    assert len(found) == 1, (relative, text, found)
    return found[0]


def frame(program, function, relative, text, below=0, after=None):
    """An own frame as own_frames gives it, suspended at the line holding `text` (or
    `below` lines under it; the first after `after`)."""
    return (function, relative, source_line(program, relative, text, after) + below)


def block_on_threads(report):
    return [thread for thread in report["threads"] if thread["role"] == "block_on"]


def names_fd(root, fd):
    """Whether some node of the tree says it waits on, reads or writes fd `fd` (a detail
    key `fd` or `..._fd`)."""
    return any(value == fd for node in walk(root) for key, value in (node.get("detail") or {}).items() if key == "fd" or key.endswith("_fd"))


def check_sockets_named(report, live):
    """Live, every fd waited on says what it is (from /proc): a socket, or a file a body
    streams; a core has no /proc. An in-memory duplex stream has no fd."""
    kinds = {node["detail"]["fd_kind"] for _, root in trees(report) for node in walk(root)
             if node["kind"] == "io_readiness" and node["detail"]["fd"] is not None}
    assert kinds <= ({"socket", "file"} if live else {None})


def copy_wait(source, destination, waiting):
    """One direction of a copy: from fd `source` to fd `destination`, waiting to `read`
    the source or to `write` the destination."""
    return ("copy", source, destination, waiting)


def copied(report, source, destination):
    """The direction from fd `source` to fd `destination` of the one copy between them:
    bytes copied so far, and bytes read and not yet written."""
    found = []
    for _, root in trees(report):
        for node in walk(root):
            if node["kind"] == "io_copy_bidirectional":
                detail = node["detail"]
                if (detail["a_fd"], detail["b_fd"]) == (source, destination):
                    found.append(detail["a_to_b"])
                elif (detail["b_fd"], detail["a_fd"]) == (source, destination):
                    found.append(detail["b_to_a"])
    [direction] = found
    return direction["copied"], direction["buffered"]


def read_wait(fd):
    return ("io_readiness", fd, ("read",), "read")


def frame_wait(fd):
    """A tokio_util `Framed` reading its next frame."""
    return ("io_readiness", fd, ("read",), "read frame")


def write_wait(fd):
    return ("io_readiness", fd, ("write",), "write")


def accept_wait(fd):
    return ("io_readiness", fd, ("read",), "accept")


# ---------------------------------------------------------------------------------------
# Running the programs


@contextmanager
def started(argv, directory, env=None):
    """A program started in `directory` (its own, so that the kernel's core lands there),
    allowed to dump core, its output in files there; killed when the block ends."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "stdout"), "w") as out, open(os.path.join(directory, "stderr"), "w") as err:
        process = subprocess.Popen(argv, cwd=directory, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   env=dict(os.environ, **(env or {})), preexec_fn=allow_core_dumps)
    process.directory = directory
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def alive(process):
    return lambda: process.poll() is None


class Scenario:
    """A stuck state of one program, inspected in one process of it."""
    program = None      # realworld.PROGRAMS name
    name = None
    flavors = None      # runtimes by flavor the process runs
    # Timers the program re-arms while it waits (a heartbeat): their deadlines move
    # between two looks at the live process.
    rearms_timers = False

    def drive(self, binary, workdir, stack):
        """Starts the program (and its peers) in the stuck state; returns the inspected
        process and the facts the checks need. `stack` (an ExitStack) cleans up."""
        raise NotImplementedError

    def check_threads(self, report, facts, live):
        """What the program's threads wait for (the block_on futures)."""
        raise NotImplementedError

    def check_tasks(self, report, facts, live):
        """What each task waits for."""
        raise NotImplementedError


# ---------------------------------------------------------------------------------------
# bore: a TCP tunnel. `bore server` takes control connections on the fixed port 7835 and
# tunnels a public port to `bore local`, which connects each tunnelled connection to a
# local service; both ends run tokio::io::copy_bidirectional. Here the local service
# accepts and never reads or writes; one public client stays silent (an idle proxied
# stream) and one sends until every buffer on the way is full (a stalled one).

BORE_CONTROL_PORT = 7835
# The server's stale-connection reaper sleeps 10 s per tunnelled connection, then ends.
BORE_REAPER_SECS = 10


@contextmanager
def bore_control_port():
    """Held while a bore server runs: its control port is fixed, so two test runs on this
    machine take turns, and anything else on the port fails the test plainly."""
    with open("/tmp/tokio-async-realworld-bore.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert not clients.port_in_use(BORE_CONTROL_PORT), "port 7835 is taken: another bore server runs on this machine"
        yield


def connections_to(pid, remote_port):
    """The process's connections to `remote_port`, by their local port."""
    fds = clients.socket_fds(pid)
    return {entry["local"][1]: dict(entry, fd=fds[entry["inode"]]) for entry in clients.tcp_sockets()
            if entry["remote"][1] == remote_port and entry["state"] == "established" and entry["inode"] in fds}


class Tunnel(Scenario):
    program = "bore"
    flavors = {"MultiThread": 1}

    def drive(self, binary, workdir, stack):
        stack.enter_context(bore_control_port())
        public_port = clients.free_port()
        server = stack.enter_context(started(
            [binary, "server", "--bind-addr", "127.0.0.1", "--bind-tunnels", "127.0.0.1",
             "--min-port", str(public_port), "--max-port", str(public_port)], os.path.join(workdir, "server")))
        clients.wait_listening(BORE_CONTROL_PORT, alive(server))
        service = clients.SilentService()
        stack.callback(service.close)
        local = stack.enter_context(started(
            [binary, "local", str(service.port), "--local-host", "127.0.0.1", "--to", "127.0.0.1", "--port", str(public_port)],
            os.path.join(workdir, "local")))
        clients.wait_listening(public_port, alive(server))
        facts = {
            "server.control_listener": clients.listener_fd(server.pid, BORE_CONTROL_PORT),
            "server.public_listener": clients.listener_fd(server.pid, public_port),
        }
        [(control_port, control)] = connections_to(local.pid, BORE_CONTROL_PORT).items()
        facts["local.control"] = control["fd"]
        facts["server.control"] = clients.fd_of(server.pid, BORE_CONTROL_PORT, control_port)
        for stream in ("idle", "stalled"):
            # Each tunnelled connection is a new control-port connection from bore local
            # (its data path) and a connection from bore local to the service.
            tunnels_before = set(connections_to(local.pid, BORE_CONTROL_PORT))
            accepted = len(service.accepted) + 1
            public = clients.connect(public_port)
            stack.callback(public.close)
            clients.wait_until(lambda n=accepted: len(service.accepted) == n, "the service accepts the %s stream" % stream,
                               alive=alive(local))
            [(tunnel_port, tunnel)] = [(port, entry) for port, entry in connections_to(local.pid, BORE_CONTROL_PORT).items()
                                       if port not in tunnels_before]
            service_port = service.peer_ports()[-1]
            facts["local.%s.tunnel" % stream] = tunnel["fd"]
            facts["local.%s.service" % stream] = connections_to(local.pid, service.port)[service_port]["fd"]
            facts["server.%s.tunnel" % stream] = clients.fd_of(server.pid, BORE_CONTROL_PORT, tunnel_port)
            facts["server.%s.public" % stream] = clients.fd_of(server.pid, public_port, clients.local_port(public))
            if stream == "stalled":
                facts["stalled.bytes_sent"] = clients.fill(public)
                queues = lambda: [(e["tx_queue"], e["rx_queue"]) for e in clients.tcp_sockets()]  # noqa: E731
                clients.wait_still(queues, "the stalled stream's data stops moving", alive=alive(server))
        facts["last_connection"] = time.monotonic()
        return self.inspected(server, local, facts), facts


class TunnelServer(Tunnel):
    """The bore server: its control connection's heartbeat loop, two proxied streams."""
    name = "server"
    # The control connection sends a heartbeat and re-arms a 500 ms accept timeout.
    rearms_timers = True

    def inspected(self, server, local, facts):
        # Until its reapers end the server holds a sleeping task per tunnelled connection.
        time.sleep(max(0.0, facts["last_connection"] + BORE_REAPER_SECS + 1 - time.monotonic()))
        return server

    def check_threads(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        [main] = block_on_threads(report)
        # The main thread blocks on `run`: the server accepting control connections.
        assert waits(main["future"], program) == [(
            (frame(program, "bore::run::{async_block#0}", "src/main.rs", "server.listen().await?"),
             frame(program, "bore_cli::server::Server::listen", "src/server.rs", "listener.accept().await?")),
            accept_wait(facts["server.control_listener"]),
        )], describe(main["future"])

    def check_tasks(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        server_rs = "src/server.rs"
        spawned = frame(program, "bore_cli::server::Server::listen::{async_block#0}", server_rs,
                        "this.handle_connection(stream).await")
        forwarding = frame(program, "bore_cli::server::Server::handle_connection", server_rs,
                           "tokio::io::copy_bidirectional(&mut parts.io, &mut stream2).await?")
        heartbeat = frame(program, "bore_cli::server::Server::handle_connection", server_rs,
                          "timeout(TIMEOUT, listener.accept()).await")
        by_task = {task["id"]: waits(task["root"], program) for task in report["tasks"]}
        expected = [
            # The control connection: between heartbeats, accepting on the public port
            # for at most 500 ms.
            [((spawned, heartbeat), accept_wait(facts["server.public_listener"]))],
            # The idle stream: each direction reads its side.
            sorted([((spawned, forwarding), copy_wait(facts["server.idle.tunnel"], facts["server.idle.public"], "read")),
                    ((spawned, forwarding), copy_wait(facts["server.idle.public"], facts["server.idle.tunnel"], "read"))]),
            # The stalled one: the public client's bytes wait to be written to the tunnel
            # (bore local reads no more), and the tunnel is read for the other direction.
            sorted([((spawned, forwarding), copy_wait(facts["server.stalled.tunnel"], facts["server.stalled.public"], "read")),
                    ((spawned, forwarding), copy_wait(facts["server.stalled.public"], facts["server.stalled.tunnel"], "write"))]),
        ]
        assert sorted(by_task.values()) == sorted(expected), describe_all(report)
        # The heartbeat's accept is limited by a timeout, and each task runs in its span.
        [control] = [task for task in report["tasks"] if by_task[task["id"]] == expected[0]]
        assert [node["kind"] for node in walk(control["root"]) if node["kind"] in ("instrumented", "timeout")] == ["instrumented", "timeout"]
        # Nothing crossed the idle stream; the stalled one moved bytes and holds some it
        # could not write.
        idle_tunnel, idle_public = facts["server.idle.tunnel"], facts["server.idle.public"]
        assert copied(report, idle_tunnel, idle_public) == copied(report, idle_public, idle_tunnel) == (0, 0)
        tunnel, public = facts["server.stalled.tunnel"], facts["server.stalled.public"]
        assert copied(report, tunnel, public) == (0, 0)
        moved, held = copied(report, public, tunnel)
        assert 0 < moved < facts["stalled.bytes_sent"] and held > 0


class TunnelClient(Tunnel):
    """bore local: its control connection and two proxied streams to the service."""
    name = "local"

    def inspected(self, server, local, facts):
        return local

    def check_threads(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        [main] = block_on_threads(report)
        # The control connection: the next message (a heartbeat every 500 ms).
        assert waits(main["future"], program) == [(
            (frame(program, "bore::run::{async_block#0}", "src/main.rs", "client.listen().await?"),
             frame(program, "bore_cli::client::Client::listen", "src/client.rs", "match conn.recv().await? {"),
             frame(program, "bore_cli::shared::Delimited<U>::recv", "src/shared.rs", "if let Some(next_message) = self.0.next().await {")),
            frame_wait(facts["local.control"]),
        )], describe(main["future"])

    def check_tasks(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        client_rs = "src/client.rs"
        spawned = frame(program, "bore_cli::client::Client::listen::{async_block#0}", client_rs,
                        "match this.handle_connection(id).await {")
        forwarding = frame(program, "bore_cli::client::Client::handle_connection", client_rs,
                           "tokio::io::copy_bidirectional(&mut local_conn, &mut parts.io).await?")
        expected = [
            sorted([((spawned, forwarding), copy_wait(facts["local.idle.service"], facts["local.idle.tunnel"], "read")),
                    ((spawned, forwarding), copy_wait(facts["local.idle.tunnel"], facts["local.idle.service"], "read"))]),
            # The service reads nothing: the tunnel's bytes wait to be written to it.
            sorted([((spawned, forwarding), copy_wait(facts["local.stalled.service"], facts["local.stalled.tunnel"], "read")),
                    ((spawned, forwarding), copy_wait(facts["local.stalled.tunnel"], facts["local.stalled.service"], "write"))]),
        ]
        assert sorted(waits(task["root"], program) for task in report["tasks"]) == sorted(expected), describe_all(report)
        service, tunnel = facts["local.idle.service"], facts["local.idle.tunnel"]
        assert copied(report, service, tunnel) == copied(report, tunnel, service) == (0, 0)
        service, tunnel = facts["local.stalled.service"], facts["local.stalled.tunnel"]
        assert copied(report, service, tunnel) == (0, 0)
        moved, held = copied(report, tunnel, service)
        assert 0 < moved < facts["stalled.bytes_sent"] and held > 0


# ---------------------------------------------------------------------------------------
# mini-redis: tokio's own pub/sub server example, published. One task per connection
# (Handler::run, in a tracing span) reads frames in a select! with the shutdown broadcast;
# a subscriber's task runs Subscribe::apply, a select! over a StreamMap of its channels'
# broadcast receivers (async-stream generators), its socket and the shutdown broadcast.

REDIS_IDLE = 8
REDIS_SUBSCRIBERS = 3
REDIS_PAYLOAD = 64 * 1024
# Enough to fill the slow subscriber's socket (the server's send buffer grows to 4 MiB);
# fewer than the channel's 1024 slots, so no receiver lags.
REDIS_MESSAGES = 128


def resp_reply(*items):
    """A RESP array reply of bulk strings and integers, as mini-redis writes it."""
    encoded = [b":%d\r\n" % item if isinstance(item, int) else b"$%d\r\n%s\r\n" % (len(item), item) for item in items]
    return b"*%d\r\n" % len(items) + b"".join(encoded)


class PubSub(Scenario):
    """Idle connections, a request cut mid-way, a stalled upload (a SET whose value never
    ends), subscribers idle on two channels, and a subscriber that reads nothing while a
    publisher floods its channel (a stalled download)."""
    program = "mini-redis"
    name = "pubsub"
    flavors = {"MultiThread": 1}

    def drive(self, binary, workdir, stack):
        port = clients.free_port()
        server = stack.enter_context(started([binary, "--port", str(port)], os.path.join(workdir, self.name)))
        clients.wait_listening(port, alive(server))
        facts = {"listener": clients.listener_fd(server.pid, port), "readers": {}}
        ports = {}

        def client(role, receive_buffer=None):
            connection = clients.connect(port, receive_buffer)
            stack.callback(connection.close)
            ports[role] = clients.local_port(connection)
            facts[role] = clients.fd_of(server.pid, port, ports[role])
            return connection

        for index in range(REDIS_IDLE):
            client("idle.%d" % index)
        client("mid_request").sendall(b"*2\r\n$3\r\nGET\r\n")
        client("upload").sendall(b"*3\r\n$3\r\nset\r\n$1\r\nk\r\n$10000000\r\n" + b"v" * REDIS_PAYLOAD)
        for index in range(REDIS_SUBSCRIBERS):
            subscriber = client("subscriber.%d" % index)
            subscriber.sendall(clients.resp("subscribe", "ch1", "ch2"))
            expected = resp_reply(b"subscribe", b"ch1", 1) + resp_reply(b"subscribe", b"ch2", 2)
            assert clients.read_exactly(subscriber, len(expected)) == expected
        slow = client("slow_subscriber", clients.SMALL_BUFFER)
        slow.sendall(clients.resp("subscribe", "firehose"))
        expected = resp_reply(b"subscribe", b"firehose", 1)
        assert clients.read_exactly(slow, len(expected)) == expected
        publisher = client("publisher")
        for _ in range(REDIS_MESSAGES):
            publisher.sendall(clients.resp("publish", "firehose", b"m" * REDIS_PAYLOAD))
            # One subscriber received it.
            assert clients.read_exactly(publisher, 4) == b":1\r\n"
        readers = [role for role in ports if role != "slow_subscriber"]
        clients.wait_until(lambda: all(clients.all_read(server.pid, port, ports[role]) for role in readers),
                           "the server has read every request", alive=alive(server))
        sending = lambda: clients.connection(server.pid, port, ports["slow_subscriber"])["tx_queue"]  # noqa: E731
        clients.wait_still(sending, "the slow subscriber's socket stops taking messages", alive=alive(server))
        facts["pid"] = server.pid
        return server, facts

    def check_threads(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        [main] = block_on_threads(report)
        # server::run's select! of the accept loop (it is not spawned) and Ctrl-C.
        main_block = frame(program, "mini_redis_server::main::{async_block#0}", "src/bin/server.rs",
                           "server::run(listener, signal::ctrl_c()).await")
        run = frame(program, "mini_redis::server::run", "src/server.rs", "tokio::select! {")
        assert waits(main["future"], program) == sorted([
            ((main_block, run,
              frame(program, "mini_redis::server::Listener::run", "src/server.rs", "let socket = self.accept().await?;"),
              frame(program, "mini_redis::server::Listener::accept", "src/server.rs", "match self.listener.accept().await {")),
             accept_wait(facts["listener"])),
            ((main_block, run), ("signal_recv", "SIGINT")),
        ]), describe(main["future"])

    def check_tasks(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        server_rs, connection_rs, shutdown_rs = "src/server.rs", "src/connection.rs", "src/shutdown.rs"
        subscribe_rs, command_rs = "src/cmd/subscribe.rs", "src/cmd/mod.rs"
        run = frame(program, "mini_redis::server::run", server_rs, "tokio::select! {")
        main_tid = facts["pid"]

        # Every connection's task: Handler::run (an async fn in a tracing span, the body an
        # async block) reads a frame, or applies a command, beside the shutdown broadcast.
        spawned = frame(program, "mini_redis::server::Listener::run::{async_block#0}", server_rs,
                        "if let Err(err) = handler.run().await {")
        handler = frame(program, "mini_redis::server::Handler::run", server_rs, "#[instrument(skip(self))]", below=1)
        handler_block = "mini_redis::server::Handler::run::{async_block#0}"
        selecting = frame(program, handler_block, server_rs, "let maybe_frame = tokio::select! {")
        # The await of `cmd.apply(...)`, written on the line after the call.
        applying = frame(program, handler_block, server_rs, "cmd.apply(&self.db, &mut self.connection, &mut self.shutdown)", below=1)
        read_frame = frame(program, "mini_redis::connection::Connection::read_frame", connection_rs,
                           "if 0 == self.stream.read_buf(&mut self.buffer).await? {")
        shutdown = frame(program, "mini_redis::shutdown::Shutdown::recv", shutdown_rs, "let _ = self.notify.recv().await;")

        def reading(fd):
            above = (spawned, handler, selecting)
            return sorted([(above + (read_frame,), read_wait(fd)), (above + (shutdown,), ("broadcast_recv",))])

        command = frame(program, "mini_redis::cmd::Command::apply", command_rs, "Subscribe(cmd) => cmd.apply(db, dst, shutdown).await,")
        subscribed = (spawned, handler, applying, command)
        listening = frame(program, "mini_redis::cmd::subscribe::Subscribe::apply", subscribe_rs, "select! {")
        channel = frame(program, "mini_redis::cmd::subscribe::subscribe_to_channel::{async_block#0}", subscribe_rs,
                        "match rx.recv().await {")

        def subscribed_to_two(fd):
            above = subscribed + (listening,)
            return sorted([(above + (channel,), ("broadcast_recv",))] * 2 +
                          [(above + (read_frame,), read_wait(fd)), (above + (shutdown,), ("broadcast_recv",))])

        # The slow subscriber: writing a message's payload to a socket that takes no more.
        writing = subscribed + (
            frame(program, "mini_redis::cmd::subscribe::Subscribe::apply", subscribe_rs,
                  "dst.write_frame(&make_message_frame(channel_name, msg)).await?;"),
            frame(program, "mini_redis::connection::Connection::write_frame", connection_rs, "self.write_value(entry).await?;"),
            frame(program, "mini_redis::connection::Connection::write_value", connection_rs, "self.stream.write_all(val).await?;"),
        )
        purge = frame(program, "mini_redis::db::purge_expired_tasks", "src/db.rs", "shared.background_task.notified().await;")
        readers = ["idle.%d" % index for index in range(REDIS_IDLE)] + ["mid_request", "upload", "publisher"]
        subscribers = [facts["subscriber.%d" % index] for index in range(REDIS_SUBSCRIBERS)]
        expected = [reading(facts[role]) for role in readers] + [subscribed_to_two(fd) for fd in subscribers]
        expected += [[(writing, write_wait(facts["slow_subscriber"]))], [((purge,), ("notified",))]]
        assert sorted(waits(task["root"], program) for task in report["tasks"]) == sorted(expected), describe_all(report)

        # Which channels: one shutdown broadcast, whose sender server::run keeps; each
        # subscriber's StreamMap has ch1 and ch2 by name, the same two broadcasts for all.
        receivers = {}
        for task in report["tasks"]:
            for path in paths(task["root"]):
                if path[-1]["kind"] == "broadcast_recv":
                    names = [node["branch"]["name"] for node in path if node.get("branch", {}).get("name")]
                    receivers.setdefault(tuple(names) or ("shutdown",), set()).add(path[-1]["detail"]["address"])
        assert sorted(receivers) == [("ch1",), ("ch2",), ("shutdown",)]
        assert all(len(addresses) == 1 for addresses in receivers.values()) and len(set.union(*receivers.values())) == 3
        holders = {json.dumps(node["detail"].get("senders_held_by"), sort_keys=True) for task in report["tasks"] for node in walk(task["root"])
                   if node["kind"] == "broadcast_recv" and node["detail"]["address"] in receivers[("shutdown",)]}
        assert [json.loads(holder) for holder in holders] == [[{
            "local": "server.notify_shutdown", "thread": main_tid,
            "location": {"file": server_rs, "line": run[2], "path": server_rs}}]]
        # Each handler runs in its #[instrument] span, disabled: the server installs no
        # subscriber that wants it, and `Span::none()` keeps no name to read.
        spans = [(node["detail"]["span"], node["summary"]) for task in report["tasks"] for node in walk(task["root"])
                 if node["kind"] == "instrumented"]
        assert spans == [(None, "in a disabled span")] * (len(report["tasks"]) - 1)


# ---------------------------------------------------------------------------------------
# dufs: an HTTP file server on hyper (hyper-util's auto builder, HTTP/1 and 2). main spawns
# an accept loop per address and waits in a select! of their JoinHandles and Ctrl-C; each
# connection is a task of its own (handle_stream), running the request's service future
# (Server::call) inside it. Uploads go through tokio::io::copy into a tokio::fs::File;
# downloads stream the file (ReaderStream); a folder's zip is written by a task of its own
# into a tokio::io::duplex pipe that the response streams.

HTTP_IDLE = 2
UPLOAD_LENGTH = 100 * 1024 * 1024
UPLOAD_SENT = 1024 * 1024


def http_response(client):
    """One whole response with a Content-Length: (status line, body)."""
    head = clients.read_until(client, b"\r\n\r\n").decode()
    [length] = [int(line.split(":", 1)[1]) for line in head.split("\r\n") if line.lower().startswith("content-length:")]
    return head.split("\r\n", 1)[0], clients.read_exactly(client, length)


def file_fd(pid, path):
    """The process's one descriptor open on `path`."""
    directory = "/proc/%d/fd" % pid
    [fd] = [int(name) for name in os.listdir(directory) if os.readlink(os.path.join(directory, name)) == path]
    return fd


def blocking_threads_gone(pid, workers):
    """Only the main thread and the workers are left: the blocking pool's threads, which
    tokio::fs used, have ended (they idle 10 s first)."""
    return len(os.listdir("/proc/%d/task" % pid)) == 1 + workers


# A request head cut before its blank line.
HALF_A_HEAD = b"GET /big.bin HTTP/1.1\r\nHost: dufs\r\n"


class Transfers(Scenario):
    """Idle keep-alive connections, a request head cut mid-way, a stalled upload, a stalled
    download of a file and one of a folder's zip."""
    program = "dufs"
    name = "transfers"
    flavors = {"MultiThread": 1}

    def drive(self, binary, workdir, stack):
        root = os.path.join(workdir, "root")
        os.makedirs(os.path.join(root, "folder"))
        with open(os.path.join(root, "hello.txt"), "w") as hello:
            hello.write("hello\n")
        # Sparse: read back as zeros, 256 MiB.
        with open(os.path.join(root, "big.bin"), "wb") as big:
            big.truncate(256 << 20)
        # Incompressible, so the zip holds as many bytes as the file.
        with open(os.path.join(root, "folder", "random.bin"), "wb") as random:
            random.write(os.urandom(16 << 20))
        port = clients.free_port()
        server = stack.enter_context(started(
            [binary, root, "--bind", "127.0.0.1", "--port", str(port), "--allow-upload", "--allow-archive"],
            os.path.join(workdir, self.name)))
        clients.wait_listening(port, alive(server))
        facts = {"listener": clients.listener_fd(server.pid, port), "pid": server.pid}
        ports = {}

        def client(role, receive_buffer=None):
            connection = clients.connect(port, receive_buffer)
            stack.callback(connection.close)
            ports[role] = clients.local_port(connection)
            facts[role] = clients.fd_of(server.pid, port, ports[role])
            return connection

        for index in range(HTTP_IDLE):
            keepalive = client("idle.%d" % index)
            keepalive.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: dufs\r\n\r\n")
            assert http_response(keepalive) == ("HTTP/1.1 200 OK", b"hello\n")
        client("mid_request").sendall(HALF_A_HEAD)
        upload = client("upload")
        upload.sendall(b"PUT /upload.bin HTTP/1.1\r\nHost: dufs\r\nContent-Length: %d\r\n\r\n" % UPLOAD_LENGTH)
        upload.sendall(b"u" * UPLOAD_SENT)
        client("download", clients.SMALL_BUFFER).sendall(b"GET /big.bin HTTP/1.1\r\nHost: dufs\r\n\r\n")
        client("zip", clients.SMALL_BUFFER).sendall(b"GET /folder?zip HTTP/1.1\r\nHost: dufs\r\n\r\n")
        readers = ["idle.0", "idle.1", "mid_request", "upload"]
        clients.wait_until(lambda: all(clients.all_read(server.pid, port, ports[role]) for role in readers),
                           "dufs has read every request", alive=alive(server))
        sending = lambda: [clients.connection(server.pid, port, ports[role])["tx_queue"] for role in ("download", "zip")]  # noqa: E731
        clients.wait_still(sending, "the downloads stop moving", alive=alive(server))
        clients.wait_until(lambda: blocking_threads_gone(server.pid, os.cpu_count()), "dufs's blocking threads end",
                           alive=alive(server))
        for name, path in (("upload.bin", "upload.bin"), ("big.bin", "big.bin"), ("random.bin", "folder/random.bin")):
            facts["file." + name] = file_fd(server.pid, os.path.join(root, path))
        return server, facts

    def check_threads(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        [main] = block_on_threads(report)
        [accept_loop] = [task["id"] for task in report["tasks"] if waits(task["root"], program) == self.accept_loop(program, facts)]
        block = frame(program, "dufs::main::{async_block#0}", "src/main.rs", "tokio::select! {")
        # main's select! of the accept loops' JoinHandles (join_all) and Ctrl-C.
        assert waits(main["future"], program) == sorted([
            ((block,), ("join_handle", accept_loop)),
            ((block, frame(program, "dufs::shutdown_signal", "src/main.rs", "if let Err(e) = tokio::signal::ctrl_c().await {")),
             ("signal_recv", "SIGINT")),
        ]), describe(main["future"])

    def accept_loop(self, program, facts):
        # The accept loop of a plain (not TLS) address.
        accepting = frame(program, "dufs::serve::{async_block#1}", "src/main.rs", "listener.accept().await", after="(None, None) => {")
        return [((accepting,), accept_wait(facts["listener"]))]

    def check_tasks(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        connection = frame(program, "dufs::handle_stream", "src/main.rs", ".serve_connection_with_upgrades(stream, hyper_service)", below=1)
        uploading = (connection,
                     frame(program, "dufs::server::Server::call", "src/server.rs", "let mut res = match self.clone().handle(req).await {"),
                     frame(program, "dufs::server::Server::handle", "src/server.rs",
                           "self.handle_upload(path, None, size, req, &mut res).await?;"),
                     frame(program, "dufs::server::Server::handle_upload", "src/server.rs",
                           "let ret = io::copy(&mut body_reader, &mut file).await;"))
        zipping = (frame(program, "dufs::server::Server::handle_zip_dir::{async_block#0}", "src/server.rs", "if let Err(e) = zip_dir(",
                         below=10),
                   frame(program, "dufs::server::zip_dir", "src/server.rs", "zip.add_file(&filename, &zip_path).await?;"))
        served = [((connection,), ("http_server_connection",))]
        expected = [self.accept_loop(program, facts)] + [served] * (HTTP_IDLE + 1)
        expected += [[(uploading, ("io_copy",))], [(zipping, ("io_copy",))]]
        # The two downloads hold the response body they write: big.bin read from its file
        # (no readiness: files are read on the blocking pool), and the zip read from the
        # in-memory duplex stream the zip task writes into.
        expected += [[((connection,), ("io_readiness", facts["file.big.bin"], (), "read"))],
                     [((connection,), ("io_readiness", NO_FD, ("read",), "read"))]]
        by_task = {task["id"]: waits(task["root"], program) for task in report["tasks"]}
        assert sorted(by_task.values()) == sorted(expected), describe_all(report)

        # Which connection is which: each connection task names its socket.
        connections = {}
        for role in ["idle.%d" % index for index in range(HTTP_IDLE)] + ["mid_request", "upload", "download", "zip"]:
            named = [task for task in report["tasks"] if names_fd(task["root"], facts[role])]
            assert len(named) == 1, (role, facts[role], describe_all(report))
            connections[role] = named[0]["root"]

        def activity(role):
            """What the connection does; it names its own socket."""
            [node] = [node for node in walk(connections[role]) if node["kind"] == "http_server_connection"]
            detail = dict(node["detail"])
            assert detail.pop("fd") == facts[role], (role, node)
            return detail

        idle = {"activity": "waiting for a request", "reading": "init", "unparsed": 0, "writing": "init"}
        assert [activity("idle.%d" % index) for index in range(HTTP_IDLE)] == [idle] * HTTP_IDLE
        # Half a request head has arrived: not the same as a connection that has none.
        assert activity("mid_request") == {"activity": "reading a request head", "reading": "init",
                                           "unparsed": len(HALF_A_HEAD), "writing": "init"}
        assert activity("upload") == {"activity": "running the service for a request", "reading": "body", "unparsed": 0,
                                      "writing": "init"}
        writing = {"activity": "writing a response", "reading": "keepalive", "unparsed": 0, "writing": "body"}
        assert activity("download") == activity("zip") == writing
        # The upload copies the request body into the file: all that was sent, nothing held.
        [upload] = [node for node in walk(connections["upload"]) if node["kind"] == "io_copy"]
        assert upload["detail"] == {"buffered": 0, "copied": UPLOAD_SENT, "reader_fd": None, "waiting": "read",
                                    "writer_fd": facts["file.upload.bin"]}
        # The download streams big.bin.
        assert names_fd(connections["download"], facts["file.big.bin"]), describe(connections["download"])
        # The zip's task copies random.bin into the zip writer, which waits for the
        # response to take more from the pipe.
        [zip_task] = [task["root"] for task in report["tasks"] if by_task[task["id"]] == [(zipping, ("io_copy",))]]
        [zip_copy] = [node for node in walk(zip_task) if node["kind"] == "io_copy"]
        assert (zip_copy["detail"]["waiting"], zip_copy["detail"]["reader_fd"]) == ("write", facts["file.random.bin"])
        assert zip_copy["detail"]["buffered"] > 0


# ---------------------------------------------------------------------------------------
# rumqttd: an MQTT broker. Broker::start runs each listener of its config on an OS thread of
# its own (named after the listener), in a current_thread runtime of its own that blocks on
# Server::start, the accept loop; each connection is a task there (remote, in a tracing
# span), whose RemoteLink::start selects between reading the socket (Network::read, under
# the keep-alive timeout) and the router's wake-ups (LinkRx::exchange, a flume channel).
# The router is a plain thread, synchronous; main joins the listener threads.

MQTT_IDLE = 4
MQTT_SUBSCRIBERS = 2
MQTT5_IDLE = 2
MQTT_PAYLOAD = 16 * 1024
# Enough to fill the slow subscriber's socket (the broker's send buffer grows to 4 MiB).
MQTT_MESSAGES = 512

BROKER_CONFIG = """\
id = 0

[router]
id = 0
max_connections = 10010
max_outgoing_packet_count = 200
max_segment_size = 104857600
max_segment_count = 10

[v4.1]
name = "v4-1"
listen = "127.0.0.1:%(v4)d"
next_connection_delay_ms = 1
    [v4.1.connections]
    connection_timeout_ms = 60000
    max_payload_size = 20480
    max_inflight_count = 100
    dynamic_filters = true

[v5.1]
name = "v5-1"
listen = "127.0.0.1:%(v5)d"
next_connection_delay_ms = 1
    [v5.1.connections]
    # The longest a u16 holds: how long the connection that sends no CONNECT lasts.
    connection_timeout_ms = 65535
    max_payload_size = 20480
    max_inflight_count = 100
"""


class Broker(Scenario):
    """Idle MQTT 3.1.1 and MQTT 5 clients, idle subscribers, and a subscriber that reads
    nothing while a publisher floods its topic (a stalled download); both listeners accept."""
    program = "rumqttd"
    name = "broker"
    flavors = {"CurrentThread": 2}

    def drive(self, binary, workdir, stack):
        directory = os.path.join(workdir, self.name)
        os.makedirs(directory)
        ports = {"v4": clients.free_port(), "v5": clients.free_port()}
        config = os.path.join(directory, "rumqttd.toml")
        with open(config, "w") as out:
            out.write(BROKER_CONFIG % ports)
        broker = stack.enter_context(started([binary, "--config", config, "--quiet"], directory))
        for port in ports.values():
            clients.wait_listening(port, alive(broker))
        facts = {"listener.v4": clients.listener_fd(broker.pid, ports["v4"]),
                 "listener.v5": clients.listener_fd(broker.pid, ports["v5"])}
        peers = {}

        def client(role, listener, receive_buffer=None):
            """A connected MQTT client, its CONNECT accepted."""
            connection = clients.connect(ports[listener], receive_buffer)
            stack.callback(connection.close)
            peers[role] = (ports[listener], clients.local_port(connection))
            facts[role] = clients.fd_of(broker.pid, *peers[role])
            connect = clients.mqtt_connect if listener == "v4" else clients.mqtt5_connect
            connection.sendall(connect(role))
            kind, body = clients.mqtt_packet(connection)
            # CONNACK, return (reason) code 0: accepted.
            assert (kind, body[1]) == (2, 0), (role, kind, body)
            return connection

        def subscribe(connection, topic):
            connection.sendall(clients.mqtt_subscribe(1, topic))
            # SUBACK of packet 1, QoS 0 granted.
            assert clients.mqtt_packet(connection) == (9, b"\x00\x01\x00")

        for index in range(MQTT_IDLE):
            client("idle.%d" % index, "v4")
        # A connection that never sends its CONNECT: its task waits for one, at most the
        # listener's connection_timeout_ms (65 s; the debuggers read the stuck state within
        # seconds). Accepted before the MQTT 5 clients, so their CONNACKs mean its task has
        # been polled (a current_thread runtime runs its tasks in order).
        connecting = clients.connect(ports["v5"])
        stack.callback(connecting.close)
        peers["connecting"] = (ports["v5"], clients.local_port(connecting))
        facts["connecting"] = clients.fd_of(broker.pid, *peers["connecting"])
        for index in range(MQTT5_IDLE):
            client("idle5.%d" % index, "v5")
        for index in range(MQTT_SUBSCRIBERS):
            subscribe(client("subscriber.%d" % index, "v4"), "news")
        subscribe(client("slow_subscriber", "v4", clients.SMALL_BUFFER), "firehose")
        publisher = client("publisher", "v4")
        for _ in range(MQTT_MESSAGES):
            publisher.sendall(clients.mqtt_publish("firehose", b"m" * MQTT_PAYLOAD))
        readers = [role for role in peers if role != "slow_subscriber"]
        clients.wait_until(lambda: all(clients.all_read(broker.pid, *peers[role]) for role in readers),
                           "the broker has read every packet", alive=alive(broker))
        sending = lambda: clients.connection(broker.pid, *peers["slow_subscriber"])["tx_queue"]  # noqa: E731
        clients.wait_still(sending, "the slow subscriber's socket stops taking messages", alive=alive(broker))
        return broker, facts

    def accepting(self, program, facts, listener):
        """A listener thread's block_on future: the async block of its thread's closure in
        Broker::start, in Server::start's accept loop."""
        broker_rs = "src/server/broker.rs"
        closure = {"v4": 2, "v5": 3}[listener]
        block = frame(program, "rumqttd::server::broker::Broker::start::{closure#%d}::{async_block#0}" % closure, broker_rs,
                      "if let Err(e) = server.start(LinkType::Remote).await {",
                      after="for (_, config) in %s_config.clone() {" % listener)
        accept = frame(program, "rumqttd::server::broker::Server<P>::start", broker_rs,
                       "let (stream, addr) = match listener.accept().await {")
        return [((block, accept), accept_wait(facts["listener." + listener]))]

    def runtimes_by_listener(self, report, facts):
        """Each listener's runtime (address): the one its block_on thread runs."""
        runtimes = {}
        for thread in block_on_threads(report):
            for listener in ("v4", "v5"):
                if names_fd(thread["future"], facts["listener." + listener]):
                    runtimes[listener] = thread["runtime"]
        return runtimes

    def check_threads(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        # Only the listener threads run tokio: main joins them, the router is a plain thread.
        assert [thread["role"] for thread in report["threads"]] == ["block_on", "block_on"], report["threads"]
        # Each accepts on its own listener.
        threads = {name: [thread for thread in block_on_threads(report)
                          if waits(thread["future"], program) == self.accepting(program, facts, name)] for name in ("v4", "v5")}
        assert [len(threads[name]) for name in ("v4", "v5")] == [1, 1], describe_all(report)
        # A runtime each, the thread named after the listener's config (a core has no names).
        assert threads["v4"][0]["runtime"] != threads["v5"][0]["runtime"]
        assert [threads[name][0]["name"] for name in ("v4", "v5")] == (["v4-1", "v5-1"] if live else [None, None])

    def check_tasks(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        broker_rs, remote_rs, network_rs = "src/server/broker.rs", "src/link/remote.rs", "src/link/network.rs"
        linked = frame(program, "rumqttd::server::broker::remote", broker_rs, "match link.start().await {")
        start = "rumqttd::link::remote::RemoteLink<P>::start"
        selecting = frame(program, start, remote_rs, "select! {")
        reading = (frame(program, "rumqttd::link::network::Network<P>::read", network_rs,
                         "timeout(self.keepalive, self.read_bytes(required)).await??;"),
                   frame(program, "rumqttd::link::network::Network<P>::read_bytes", network_rs,
                         "let read = self.socket.read_buf(&mut self.read).await?;"))
        exchanging = frame(program, "rumqttd::link::local::LinkRx::exchange", "src/link/local.rs",
                           "self.router_rx.recv_async().await?;", after="pub(crate) async fn exchange(")

        def idle(fd):
            # Reading the next packet under the keep-alive timeout, beside the router's
            # wake-up on the link's flume channel.
            return sorted([((linked, selecting) + reading, read_wait(fd)), ((linked, selecting, exchanging), ("flume_recv",))])

        # The slow subscriber: writing the router's notifications to a socket that takes
        # no more (the select! chose the router's branch; its body awaits the write).
        writing = (linked, frame(program, start, remote_rs, "self.network.writev(packets).await?;"),
                   frame(program, "rumqttd::link::network::Network<P>::writev", network_rs,
                         "self.socket.write_all(&self.write).await?;", after="pub async fn writev("))
        # The connection without CONNECT: mqtt_connect reads one in an async block, under
        # the connection timeout.
        connecting = (frame(program, "rumqttd::server::broker::remote", broker_rs,
                            "let connect_packet = match mqtt_connect(config, &mut network).await {"),
                      frame(program, "rumqttd::link::remote::mqtt_connect", remote_rs, ".await??;"),
                      frame(program, "rumqttd::link::remote::mqtt_connect::{async_block#0}", remote_rs,
                            "let packet = network.read().await?;")) + reading
        linked_v4 = ["idle.%d" % index for index in range(MQTT_IDLE)] + ["subscriber.%d" % index for index in range(MQTT_SUBSCRIBERS)]
        linked_v4 += ["publisher"]
        linked_v5 = ["idle5.%d" % index for index in range(MQTT5_IDLE)]
        expected = [idle(facts[role]) for role in linked_v4 + linked_v5]
        expected += [[(writing, write_wait(facts["slow_subscriber"]))], [(connecting, read_wait(facts["connecting"]))]]
        assert sorted(waits(task["root"], program) for task in report["tasks"]) == sorted(expected), describe_all(report)

        # Each connection is a task of its listener's runtime.
        tasks = {}
        for role in linked_v4 + linked_v5 + ["slow_subscriber", "connecting"]:
            named = [task for task in report["tasks"] if names_fd(task["root"], facts[role])]
            assert len(named) == 1, (role, facts[role], describe_all(report))
            tasks[role] = named[0]
        runtimes = self.runtimes_by_listener(report, facts)
        by_runtime = {}
        for role, task in tasks.items():
            by_runtime.setdefault(task["runtime"], set()).add(role)
        v4, v5 = set(linked_v4) | {"slow_subscriber"}, set(linked_v5) | {"connecting"}
        assert by_runtime == {runtimes["v4"]: v4, runtimes["v5"]: v5}
        counts = {runtime["address"]: runtime["tasks_read"] for runtime in report["runtimes"]}
        assert all(runtime["task_count"] == runtime["tasks_read"] for runtime in report["runtimes"])
        assert counts == {runtimes["v4"]: len(v4), runtimes["v5"]: len(v5)}

        # Each task runs in its `remote_link` span.
        assert [node["detail"]["span"] for task in report["tasks"] for node in walk(task["root"])
                if node["kind"] == "instrumented"] == ["remote_link"] * len(report["tasks"])

        # The timeouts: a linked client's read waits 1.5 times its keep-alive (0xFFFF s)
        # from its last packet; before CONNECT the keep-alive is Duration::MAX (no deadline)
        # inside the connection timeout (65.535 s, from the accept).
        def timeouts(role):
            return [node["detail"] for node in walk(tasks[role]["root"]) if node["kind"] == "timeout"]

        keep_alive = 0xFFFF * 1.5
        for role in linked_v4 + linked_v5:
            [keeping] = timeouts(role)
            assert keeping["deadline"] is not None
            if live:
                assert keep_alive - 600 < keeping["remaining_secs"] <= keep_alive, (role, keeping)
        assert timeouts("slow_subscriber") == []
        connect, unlimited = timeouts("connecting")
        assert connect["deadline"] is not None and unlimited == {"deadline": None, "remaining_secs": None}
        if live:
            assert 0 < connect["remaining_secs"] <= 65.535, connect

        # The router's wake-ups: each link's own bounded channel (MAX_CHANNEL_CAPACITY),
        # whose one sender the router holds, empty.
        capacity = int(re.search(r"MAX_CHANNEL_CAPACITY: usize = (\d+);",
                                 pathlib.Path(realworld.source(program), "src/router/mod.rs").read_text()).group(1))
        channels = [node["detail"] for task in report["tasks"] for node in walk(task["root"]) if node["kind"] == "flume_recv"]
        assert len({channel["address"] for channel in channels}) == len(channels) == len(linked_v4 + linked_v5)
        assert {(channel["capacity"], channel["queued"], channel["senders"], channel["closed"]) for channel in channels} == {
            (capacity, 0, 1, False)}


# ---------------------------------------------------------------------------------------
# hickory-dns: an authoritative DNS server (the hickory-server library's binary). main blocks
# on DnsServer::run, which ends in Server::block_until_done: a JoinSet of one task per UDP
# socket (handle_udp: a select! of the next datagram and the shutdown token; each request a
# task of an inner JoinSet) and one per TCP listener (handle_tcp: a select! of accept and
# the token; each connection a task reading framed messages from hickory's TcpStream in a
# TimeoutStream, handling each before the next). A task waits for SIGTERM. The TcpStream
# writes its queued responses before it reads again: a client that sends queries and reads
# no answers stops its connection's reading on a full socket.

DNS_ZONE = "example.test"
DNS_UDP_SOCKETS = 2
DNS_IDLE = 3
# Per big.example.test answer: TXT records of 250 bytes, about 50 KiB over TCP.
DNS_BIG_RECORDS = 200
# Enough answers to fill the stalled client's socket (the server's send buffer grows to 4 MiB).
DNS_BIG_QUERIES = 150
# A query cut short: its 16-bit length, then this many of its bytes.
DNS_PARTIAL = 10

DNS_CONFIG = """\
listen_addrs_ipv4 = ["127.0.0.1"]
listen_port = %(port)d
# Seconds a TCP connection may stay without a request (5 by default).
tcp_request_timeout = 86400
directory = "%(directory)s"
drop_privileges = false

[udp_socket]
sockets = %(sockets)d

[[zones]]
zone = "%(zone)s"
zone_type = "Primary"
stores = { type = "file", zone_path = "%(zone)s.zone" }
"""


def dns_zone_file():
    lines = ["$ORIGIN %s." % DNS_ZONE, "$TTL 3600",
             "@ IN SOA ns.%s. admin.%s. ( 1 3600 600 86400 3600 )" % (DNS_ZONE, DNS_ZONE),
             "@ IN NS ns.%s." % DNS_ZONE, "ns IN A 127.0.0.1", "www IN A 127.0.0.2"]
    lines += ['big IN TXT "%03d%s"' % (index, "t" * 247) for index in range(DNS_BIG_RECORDS)]
    return "\n".join(lines) + "\n"


class Nameserver(Scenario):
    """Both UDP sockets and the TCP listener waiting, idle TCP connections (answered, or
    never asked), a query cut mid-way, and a client that asks for big answers and reads
    none (a stalled download)."""
    program = "hickory-dns"
    name = "nameserver"
    flavors = {"MultiThread": 1}

    def drive(self, binary, workdir, stack):
        directory = os.path.join(workdir, self.name)
        os.makedirs(directory)
        port = clients.free_port()
        with open(os.path.join(directory, DNS_ZONE + ".zone"), "w") as zone:
            zone.write(dns_zone_file())
        config = os.path.join(directory, "named.toml")
        with open(config, "w") as out:
            out.write(DNS_CONFIG % {"port": port, "directory": directory, "sockets": DNS_UDP_SOCKETS, "zone": DNS_ZONE})
        server = stack.enter_context(started([binary, "--config", config, "--workers", "2"], directory))
        clients.wait_listening(port, alive(server))
        facts = {"listener": clients.listener_fd(server.pid, port), "udp": clients.udp_fds(server.pid, port), "pid": server.pid}
        assert len(facts["udp"]) == DNS_UDP_SOCKETS, facts
        # Over UDP, answered (the request's task has ended).
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.settimeout(10)
            udp.sendto(clients.dns_query(1, "www." + DNS_ZONE, clients.DNS_A), ("127.0.0.1", port))
            assert clients.dns_reply_header(udp.recv(65535)) == (1, 0, 1)
        ports = {}

        def client(role, receive_buffer=None):
            connection = clients.connect(port, receive_buffer)
            stack.callback(connection.close)
            ports[role] = clients.local_port(connection)
            facts[role] = clients.fd_of(server.pid, port, ports[role])
            return connection

        for index in range(DNS_IDLE):
            idle = client("idle.%d" % index)
            idle.sendall(clients.dns_framed(clients.dns_query(index, "www." + DNS_ZONE, clients.DNS_A)))
            assert clients.dns_reply_header(clients.dns_tcp_reply(idle)) == (index, 0, 1)
        client("silent")
        query = clients.dns_query(7, "www." + DNS_ZONE, clients.DNS_A)
        client("mid_request").sendall(clients.dns_framed(query)[:2 + DNS_PARTIAL])
        stalled = client("stalled", clients.SMALL_BUFFER)
        for index in range(DNS_BIG_QUERIES):
            stalled.sendall(clients.dns_framed(clients.dns_query(100 + index, "big." + DNS_ZONE, clients.DNS_TXT)))
        readers = ["idle.%d" % index for index in range(DNS_IDLE)] + ["mid_request"]
        clients.wait_until(lambda: all(clients.all_read(server.pid, port, ports[role]) for role in readers),
                           "the server has read every request", alive=alive(server))
        queues = lambda: [(e["tx_queue"], e["rx_queue"]) for e in [clients.connection(server.pid, port, ports["stalled"])]]  # noqa: E731
        clients.wait_still(queues, "the stalled client's answers stop moving", alive=alive(server))
        stalled_entry = clients.connection(server.pid, port, ports["stalled"])
        # The server stopped reading queries: some wait in its socket, unread.
        assert stalled_entry["rx_queue"] > 0 and stalled_entry["tx_queue"] > 0, stalled_entry
        return server, facts

    def serving(self, program):
        """The frames above each of the server's tasks, in hickory-server's server module."""
        server_rs = realworld.crate_directory(program, "hickory-server") + "/src/server/mod.rs"
        return {
            "udp": frame(program, "hickory_server::server::handle_udp", server_rs, "let message = tokio::select! {"),
            "listener": frame(program, "hickory_server::server::handle_tcp", server_rs,
                              "let (tcp_stream, src_addr) = tokio::select! {", after="async fn handle_tcp("),
            "connection": frame(program, "hickory_server::server::handle_tcp::{async_block#0}", server_rs,
                                "while let Some(message) = timeout_stream.next().await {", after="async fn handle_tcp("),
            "until_done": frame(program, "hickory_server::server::Server<T>::block_until_done", server_rs,
                                "while let Some(join_result) = self.join_set.join_next().await {"),
        }

    def listening(self, program, facts):
        """What the server's own tasks wait for: each UDP socket's next datagram (and its
        outbound queue), the listener's next connection, each beside the shutdown token."""
        frames = self.serving(program)
        udp = [sorted([((frames["udp"],), ("cancellation_token",)), ((frames["udp"],), ("futures_mpsc_recv",)),
                       ((frames["udp"],), ("io_readiness", fd, ("read",), "poll"))]) for fd in facts["udp"]]
        listener = sorted([((frames["listener"],), ("cancellation_token",)), ((frames["listener"],), accept_wait(facts["listener"]))])
        return udp + [listener]

    def check_threads(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        [main] = block_on_threads(report)
        # main's DnsServer::run waits in block_until_done for the JoinSet of the UDP
        # sockets' and the listener's tasks.
        listening = self.listening(program, facts)
        ids = sorted(task["id"] for task in report["tasks"] if waits(task["root"], program) in listening)
        assert len(ids) == len(listening), describe_all(report)
        run = frame(program, "hickory_dns::DnsServer::run", "src/lib.rs", "match server.block_until_done().await {")
        assert waits(main["future"], program) == sorted(
            ((run, self.serving(program)["until_done"]), ("join_handle", task_id)) for task_id in ids), describe(main["future"])
        [join_set] = [node["detail"] for node in walk(main["future"]) if node["kind"] == "join_set"]
        assert join_set == {"len": len(ids), "pending": len(ids)}

    def check_tasks(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        frames = self.serving(program)
        terminate = frame(program, "hickory_dns::DnsServer::run::{async_block#5}", "src/lib.rs", "signal.recv().await;")
        connection = (frames["connection"],)

        def reading(fd, interest):
            # hickory's TcpStream: the socket, its queue of responses to write, and the
            # TimeoutStream's sleep.
            return sorted([(connection, ("futures_mpsc_recv",)), (connection, ("io_readiness", fd, (interest,), "poll")),
                           (connection, ("sleep",))])

        readers = ["idle.%d" % index for index in range(DNS_IDLE)] + ["silent", "mid_request"]
        expected = self.listening(program, facts) + [[((terminate,), ("signal_recv", "SIGTERM"))]]
        # The stalled client's connection waits to write the answer it is writing, and
        # reads no more queries until then.
        expected += [reading(facts[role], "read") for role in readers] + [reading(facts["stalled"], "write")]
        assert sorted(waits(task["root"], program) for task in report["tasks"]) == sorted(expected), describe_all(report)

        # tokio's count is every task read: one per socket, listener and connection.
        [runtime] = report["runtimes"]
        assert runtime["task_count"] == runtime["tasks_read"] == len(report["tasks"]) == len(expected), runtime

        # One shutdown token, and each socket its own queue of responses, empty, whose one
        # sender is the socket's (a connection's) handle: of hickory-net's default size
        # (UDP) and the config's default response_buffer_size (TCP), the same.
        net_rs = realworld.source_file(program, realworld.crate_directory(program, "hickory-net") + "/src/xfer/mod.rs")
        udp_slots = int(re.search(r"const DEFAULT_STREAM_BUFFER_SIZE: usize = (\d+);", pathlib.Path(net_rs).read_text()).group(1))
        tcp_slots = int(re.search(r"fn default_tcp_response_buffer_size\(\) -> usize \{\s*(\d+)\s*\}",
                                  pathlib.Path(realworld.source(program), "src/config/mod.rs").read_text()).group(1))
        assert udp_slots == tcp_slots
        tokens = {node["detail"]["address"] for task in report["tasks"] for node in walk(task["root"])
                  if node["kind"] == "cancellation_token"}
        assert len(tokens) == 1
        queues = [node["detail"] for task in report["tasks"] for node in walk(task["root"]) if node["kind"] == "futures_mpsc_recv"]
        assert len({queue["address"] for queue in queues}) == len(queues) == DNS_UDP_SOCKETS + len(readers) + 1
        assert {(queue["capacity"], queue["queued"], queue["senders"], queue["closed"]) for queue in queues} == {
            (udp_slots, 0, 1, False)}

        # Each connection's request timeout (tcp_request_timeout), from its last request.
        sleeps = [node["detail"] for task in report["tasks"] for node in walk(task["root"]) if node["kind"] == "sleep"]
        assert len(sleeps) == len(readers) + 1 and all(sleep["deadline"] is not None for sleep in sleeps)
        if live:
            assert all(86400 - 600 < sleep["remaining_secs"] <= 86400 for sleep in sleeps), sleeps


# The zone hickory-dns forwards, to a nameserver that never answers: each query waits for
# the answer as long as its timeout (a day), tried once, from a resolver that caches nothing.
DNS_FORWARDED = "forward.test"
DNS_FORWARD_ZONE = """
[[zones]]
zone = "%(zone)s"
zone_type = "External"
stores = { type = "forward", name_servers = [{ ip = "127.0.0.1", trust_negative_responses = false, connections = [
    { port = %(upstream)d, protocol = { type = "udp" } }] }], options = { timeout = 86400, attempts = 1 } }
"""
DNS_FORWARDED_UDP = 6
# How many times hickory-net's UDP client sends a query (UdpClientStream's max_retries), and
# an upper bound of its interval between sends (hickory-proto's DEFAULT_RETRY_FLOOR, 333 ms).
DNS_SENDS = 3
DNS_RETRY_INTERVAL = 1.0


class Forwarder(Nameserver):
    """The client side of a DNS server: queries over UDP, and one over TCP, for names of a
    zone it forwards, each waiting for the answer of a nameserver that never replies."""
    program = "hickory-dns"
    name = "forwarder"
    flavors = {"MultiThread": 1}

    def drive(self, binary, workdir, stack):
        directory = os.path.join(workdir, self.name)
        os.makedirs(directory)
        upstream = clients.SilentNameserver()
        stack.callback(upstream.close)
        port = clients.free_port()
        with open(os.path.join(directory, DNS_ZONE + ".zone"), "w") as zone:
            zone.write(dns_zone_file())
        config = os.path.join(directory, "named.toml")
        with open(config, "w") as out:
            out.write(DNS_CONFIG % {"port": port, "directory": directory, "sockets": DNS_UDP_SOCKETS, "zone": DNS_ZONE})
            out.write(DNS_FORWARD_ZONE % {"zone": DNS_FORWARDED, "upstream": upstream.port})
        server = stack.enter_context(started([binary, "--config", config, "--workers", "2"], directory))
        clients.wait_listening(port, alive(server))
        facts = {"listener": clients.listener_fd(server.pid, port), "udp": clients.udp_fds(server.pid, port), "pid": server.pid,
                 "upstream": upstream.port}
        asking = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stack.callback(asking.close)
        for index in range(DNS_FORWARDED_UDP):
            asking.sendto(clients.dns_query(index, "q%d.%s" % (index, DNS_FORWARDED), clients.DNS_A), ("127.0.0.1", port))
        tcp = clients.connect(port)
        stack.callback(tcp.close)
        clients.fd_of(server.pid, port, clients.local_port(tcp))
        tcp.sendall(clients.dns_framed(clients.dns_query(99, "tcp.%s" % DNS_FORWARDED, clients.DNS_A)))
        # hickory's UDP client sends each query from a socket of its own, and again from
        # another one at each retry interval, DNS_SENDS times in all.
        clients.wait_until(lambda: len(upstream.received) == DNS_SENDS * (DNS_FORWARDED_UDP + 1),
                           "every query reaches the nameserver %d times" % DNS_SENDS, alive=alive(server))
        asked = ["q%d.%s" % (index, DNS_FORWARDED) for index in range(DNS_FORWARDED_UDP)] + ["tcp." + DNS_FORWARDED]
        assert sorted(clients.dns_question(query) for query, _ in upstream.received) == sorted(asked * DNS_SENDS)
        # The retry timer fires once more after the last send, and is done.
        time.sleep(DNS_RETRY_INTERVAL)
        ports = clients.udp_ports(server.pid)
        facts["sending"] = {fd: port for fd, port in ports.items() if fd not in facts["udp"]}
        facts["sent_from"] = sorted(address[1] for _, address in upstream.received)
        return server, facts

    def check_threads(self, report, facts, live):
        Nameserver.check_threads(self, report, facts, live)

    def lookup(self, program, protocol):
        """The frames of a forwarded query, from the server's request task (UDP) or its
        connection's task (TCP) down to hickory-net's UDP client retrying the query."""
        server, resolver, net = (realworld.crate_directory(program, crate) for crate in ("hickory-server", "hickory-resolver", "hickory-net"))
        server_rs, catalog_rs, forwarder_rs = server + "/src/server/mod.rs", server + "/src/zone_handler/catalog.rs", server + "/src/store/forwarder.rs"
        pool_rs, udp_rs = resolver + "/src/name_server_pool.rs", net + "/src/udp/udp_client_stream.rs"
        catalog = "hickory_server::zone_handler::catalog::"
        forward = "<hickory_server::store::forwarder::ForwardZoneHandler<P> as hickory_server::zone_handler::ZoneHandler>::"
        pool = "<hickory_resolver::name_server_pool::NameServerPool<P> as hickory_net::xfer::dns_handle::DnsHandle>::send::{async_block#0}"
        handler = {"udp": ("hickory_server::server::handle_udp::{async_block#0}", "cx.handle_raw_request(message, Protocol::Udp, stream_handle)"),
                   "tcp": ("hickory_server::server::handle_tcp::{async_block#0}",
                           "cx.handle_raw_request(message, Protocol::Tcp, stream_handle.clone())")}[protocol]
        return (
            frame(program, handler[0], server_rs, ".await;", after=handler[1]),
            frame(program, "hickory_server::server::ServerContext<T>::handle_raw_request", server_rs, ".await;",
                  after="self.handle_request(Bytes::from(message), src_addr, protocol, response_handler)"),
            frame(program, "hickory_server::server::ServerContext<T>::handle_request", server_rs, ".await;",
                  after=".handle_request::<_, TokioTime>(&request, reporter)"),
            frame(program, "<hickory_server::zone_handler::catalog::Catalog as hickory_server::server::request_handler::RequestHandler>"
                  "::handle_request::{async_block#0}", catalog_rs, ".await", after="self.lookup(request, response_edns, now, response_handle)"),
            frame(program, catalog + "Catalog::lookup", catalog_rs, ".await", after="lookup("),
            frame(program, catalog + "lookup", catalog_rs, "let (mut result, mut signer) = handler.search(request, lookup_options).await;"),
            frame(program, forward + "search::{async_block#0}", forwarder_rs, ".await,", after="self.lookup("),
            frame(program, forward + "lookup::{async_block#0}", forwarder_rs, "match self.resolver.lookup(name, rtype).await {"),
            frame(program, "hickory_resolver::resolver::Resolver<R>::lookup", resolver + "/src/resolver.rs", ".await",
                  after="self.inner_lookup(name.into_name()?, record_type, self.request_options())"),
            frame(program, "hickory_resolver::resolver::Resolver<R>::inner_lookup", resolver + "/src/resolver.rs", ".await",
                  after="LookupFuture::lookup_with_hosts("),
            frame(program, "hickory_resolver::caching_client::CachingClient<C>::inner_lookup", resolver + "/src/caching_client.rs", ".await;",
                  after=".lookup(query.clone(), options)"),
            # The request every lookup of the same query shares (futures' Shared).
            frame(program, pool, pool_rs, "let response = lookup.await;"),
            frame(program, pool + "::{async_block#0}", pool_rs, "match state.try_send(request).await {"),
            frame(program, "hickory_resolver::name_server_pool::PoolState<P>::try_send", pool_rs,
                  "while let Some((server, result)) = requests.next().await {"),
            frame(program, "hickory_resolver::name_server_pool::PoolState<P>::try_send::{closure#1}::{async_block#0}", pool_rs,
                  "async { (server, future.await) }"),
            frame(program, "hickory_resolver::name_server::NameServer<P>::send", resolver + "/src/name_server.rs",
                  "let (_protocol, result) = self.send_inner(request, policy, cx).await;"),
            frame(program, "hickory_resolver::name_server::NameServer<P>::send_inner", resolver + "/src/name_server.rs",
                  "let response = handle.send(request.clone()).first_answer().await;"),
            # The forward zone's timeout around the UDP client's retries.
            frame(program, "<hickory_net::runtime::TokioTime as hickory_net::runtime::Time>::timeout::{async_block#0}",
                  net + "/src/runtime.rs", ".await", after="tokio::time::timeout(duration, future)"),
            frame(program, "hickory_net::udp::udp_client_stream::retry", udp_rs, "futures_util::select! {"),
        )

    def sends(self, program):
        """The frames of one send of a query: waiting for its answer on its own socket."""
        net = realworld.crate_directory(program, "hickory-net")
        return (frame(program, "<hickory_net::udp::udp_client_stream::UdpRequest<P> as hickory_net::udp::udp_client_stream::Request>::send",
                      net + "/src/udp/udp_client_stream.rs", "let (len, src) = socket.recv_from(&mut recv_buf).await?;"),
                frame(program, "hickory_net::runtime::DnsUdpSocket::recv_from::{async_block#0}", net + "/src/runtime.rs",
                      "poll_fn(|cx| self.poll_recv_from(cx, buf)).await"))

    def check_tasks(self, report, facts, live):
        program = realworld.BY_NAME[self.program]
        terminate = frame(program, "hickory_dns::DnsServer::run::{async_block#5}", "src/lib.rs", "signal.recv().await;")
        sends = self.sends(program)
        # Each query waits for its answer on each of the sockets it sent from; its retry
        # timer has fired its last (a terminated Fuse).
        by_task = {task["id"]: waits(task["root"], program) for task in report["tasks"]}
        queries = {}
        for task in report["tasks"]:
            fds = sorted(wait[1] for frames, wait in by_task[task["id"]] if wait[0] == "io_readiness" and frames[-len(sends):] == sends)
            if fds:
                queries[task["id"]] = fds
        assert len(queries) == DNS_FORWARDED_UDP + 1, describe_all(report)

        def query(protocol, fds):
            above = self.lookup(program, protocol)
            return sorted([(above + sends, ("io_readiness", fd, ("read",), "poll")) for fd in fds] + [(above, ("future",))])

        # hickory's exchange with the nameserver, a task of its own (as many as the pool
        # opened), waits for requests on its channel beside its UDP client stream, which is
        # always ready.
        exchange = sorted([((), ("futures_mpsc_recv",)), ((), ("ready",))])
        exchanges = [task_id for task_id, found in by_task.items() if found == exchange]
        assert 1 <= len(exchanges) <= len(queries), describe_all(report)
        expected = self.listening(program, facts) + [[((terminate,), ("signal_recv", "SIGTERM"))]] + [exchange] * len(exchanges)
        # The TCP connection's task handles its query itself (UDP's spawn one each); it
        # awaits the query, not its socket, which no node names.
        tcp_top = self.lookup(program, "tcp")[0]
        tcp = [task_id for task_id in queries if by_task[task_id][0][0][0] == tcp_top]
        assert len(tcp) == 1, describe_all(report)
        expected += [query("tcp" if task_id in tcp else "udp", fds) for task_id, fds in queries.items()]
        assert sorted(by_task.values()) == sorted(expected), describe_all(report)

        # The sockets are the process's UDP sockets but its listeners, DNS_SENDS a query, each
        # the source of one query the nameserver received.
        sending = {int(fd): port for fd, port in facts["sending"].items()}
        assert sorted(fd for fds in queries.values() for fd in fds) == sorted(sending)
        assert all(len(fds) == DNS_SENDS for fds in queries.values())
        assert sorted(sending.values()) == facts["sent_from"]

        # tokio's count is every task read.
        [runtime] = report["runtimes"]
        assert runtime["task_count"] == runtime["tasks_read"] == len(report["tasks"]) == len(expected), runtime

        # The retry timer's Fuse is done; the forward zone's timeout (a day) holds.
        for task_id in queries:
            [task] = [task for task in report["tasks"] if task["id"] == task_id]
            assert [node["detail"] for node in walk(task["root"]) if node["kind"] == "future" and not node["children"]] == [{"state": "none"}]
            [timeout] = [node["detail"] for node in walk(task["root"]) if node["kind"] == "timeout"]
            assert timeout["deadline"] is not None
            if live:
                assert 86400 - 600 < timeout["remaining_secs"] <= 86400, timeout


SCENARIOS = {
    "bore": [TunnelServer(), TunnelClient()],
    "mini-redis": [PubSub()],
    "dufs": [Transfers()],
    "rumqttd": [Broker()],
    "hickory-dns": [Nameserver(), Forwarder()],
}


# ---------------------------------------------------------------------------------------
# The stuck states and their reports


class Stuck:
    """One stuck state: the facts the clients found, each debugger's attached run, the
    kernel's core of the moment GDB saw."""

    def __init__(self, scenario, profile, binary, facts, live, core, died):
        self.scenario, self.profile, self.binary = scenario, profile, binary
        self.facts, self.live, self.core, self.died = facts, live, core, died
        self.core_runs = {}


def cases():
    return [(scenario, profile) for program in realworld.selected() for scenario in SCENARIOS[program.name] for profile in realworld.selected_profiles()]


def case_id(case):
    scenario, profile = case
    return "%s-%s-%s" % (scenario.program, profile, scenario.name)


def save_outputs(stuck, run):
    """GDB's JSON and text of the stuck state, for people to read (REALWORLD_OUTPUTS)."""
    directory = os.environ.get("REALWORLD_OUTPUTS")
    sections = run.sections()
    if not directory or len(sections) != 2:
        return
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, case_id((stuck.scenario, stuck.profile)))
    for suffix, text in zip((".json", ".txt"), sections):
        with open(stem + suffix, "w") as out:
            out.write(text)


# How many times a stuck state is brought up again when a look caught the program at work.
LOOKS_AT_A_QUIET_STOP = 3


def caught_at_work(run):
    """Whether a look stopped the program while it ran a task or its workers searched for
    one: the looks one after another then disagree as the program does, not as the tool
    reads (bore's server re-arms a timer every 500 ms)."""
    sections = run.sections()
    if not sections:
        return False
    try:
        report = json.loads(sections[0])
    except ValueError:
        return False
    busy_threads = [t for t in report.get("threads", []) if t.get("state") in ("running", "searching")]
    busy_tasks = [t for t in report.get("tasks", []) if t.get("state") in ("running", "scheduled")]
    return bool(busy_threads or busy_tasks)


@pytest.fixture(scope="module", params=cases(), ids=case_id)
def stuck(request, tmp_path_factory):
    scenario, profile = request.param
    binary = realworld.build(scenario.program, profile)
    for _ in range(LOOKS_AT_A_QUIET_STOP):
        result = look_at_stuck(scenario, profile, binary, str(tmp_path_factory.mktemp(case_id(request.param))))
        if not any(caught_at_work(run) for run in result.live.values()):
            break
    save_outputs(result, result.live["gdb"])
    return result


def look_at_stuck(scenario, profile, binary, workdir):
    """Brings the program into its stuck state and reads it attached: LLDB 19, LLDB 14,
    then GDB, which kills it for the kernel's core."""
    live = {}
    with ExitStack() as stack:
        process, facts = scenario.drive(binary, workdir, stack)
        for debugger in (Lldb(), LLDB_14):
            live[debugger.name] = debugger.run_steps(capture(debugger, JSON_COMMAND), pid=process.pid)
        # GDB reads last and kills the process from the stop it read: only the stopped
        # thread resumes, into SIGABRT's default action, so the kernel's core holds
        # exactly what GDB saw.
        gdb = Gdb()
        # GDB 13 sometimes fails its own assertion while it detaches from the dying
        # process (linux-nat.c: `num_lwps (pid) == 1`); the signal is delivered by then,
        # and GDB must not leave a core of itself in the working directory.
        steps = capture(gdb, JSON_COMMAND) + capture(gdb, TEXT_COMMAND) + [
            "set scheduler-locking on", "maint set internal-error corefile no", "maint set internal-error quit yes",
            "signal SIGABRT"]
        live[gdb.name] = gdb.run_steps(steps, pid=process.pid)
        try:
            died = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            died = None
    core = os.path.join(process.directory, "core")
    if died == -signal.SIGABRT:
        wait_for_core(pathlib.Path(core))
    return Stuck(scenario, profile, binary, facts, live, core if os.path.exists(core) else None, died)


def live_report(stuck, debugger):
    run = stuck.live[debugger.name]
    sections = run.sections()
    # GDB's run printed the text report after the JSON.
    assert len(sections) == (2 if debugger.name == "gdb" else 1), run.stdout[-4000:] + run.stderr[-4000:]
    return json.loads(sections[0])


def core_report(stuck, debugger):
    """The kernel's core read in `debugger` (once per stuck state)."""
    assert stuck.core is not None, "no core: the process ended with %r" % stuck.died
    if debugger.name not in stuck.core_runs:
        stuck.core_runs[debugger.name] = debugger.run_steps(capture(debugger, JSON_COMMAND), program=stuck.binary, core=stuck.core)
    run = stuck.core_runs[debugger.name]
    sections = run.json_sections()
    assert len(sections) == 1, run.stdout[-4000:] + run.stderr[-4000:]
    return json.loads(json.dumps(sections[0]))


VIEWS = ["attached", "core"]


def report_in(stuck, debugger, view):
    return live_report(stuck, debugger) if view == "attached" else core_report(stuck, debugger)


@pytest.mark.parametrize("view", VIEWS)
def test_the_report_is_whole(debugger, stuck, view):
    """No errors anywhere, no opaque leaf, the runtimes the program runs, of the pinned
    tokio; live, every socket wait says what the fd is."""
    report = report_in(stuck, debugger, view)
    assert report["memory_source"] == ("process" if view == "attached" else core_memory_source(debugger))
    assert report["stack_source"] == ("core" if view == "attached" else core_stack_source(debugger))
    assert report["errors"] == []
    assert [thread["tid"] for thread in report["threads"] if thread.get("error")] == [], report["threads"]
    assert [task["id"] for task in report["tasks"] if task.get("error")] == []
    assert [where for where, root in trees(report) if any("error" in node for node in walk(root))] == [], describe_all(report)
    assert opaque_leaves(report) == [], describe_all(report)
    flavors = {}
    for runtime in report["runtimes"]:
        flavors[runtime["flavor"]] = flavors.get(runtime["flavor"], 0) + 1
    assert flavors == stuck.scenario.flavors
    assert {runtime["tokio_version"] for runtime in report["runtimes"]} == {realworld.TOKIO}
    check_sockets_named(report, view == "attached")


@pytest.mark.parametrize("view", VIEWS)
def test_every_task_reaches_the_programs_own_code(debugger, stuck, view):
    """Each task's tree, and each block_on future, reaches a function of the program's own
    crates, not only its libraries': a coroutine of them, or a future of theirs written by
    hand (a `future` node of their type, no coroutine: its own `poll`)."""
    report = report_in(stuck, debugger, view)
    program = realworld.BY_NAME[stuck.scenario.program]

    def own_code(node):
        return is_own(node["function"], program) or (node["kind"] == "future" and is_own(node["type"], program))
    strangers = [where for where, root in trees(report) if not any(own_code(node) for node in walk(root))]
    assert strangers == [], describe_all(report)
    # A thread blocking on a future the tool could not read has no tree to reach it.
    assert [thread["tid"] for thread in block_on_threads(report) if not thread["future"]] == []


@pytest.mark.parametrize("view", VIEWS)
def test_what_each_task_waits_for(debugger, stuck, view):
    """The handler, the socket's fd, the channel: exactly."""
    stuck.scenario.check_tasks(report_in(stuck, debugger, view), stuck.facts, view == "attached")


@pytest.mark.parametrize("view", VIEWS)
def test_what_each_thread_waits_for(debugger, stuck, view):
    stuck.scenario.check_threads(report_in(stuck, debugger, view), stuck.facts, view == "attached")


def test_the_core_holds_the_stop_gdb_read(debugger, stuck):
    """The kernel's core of the stop GDB read gives the report GDB gave attached, but for
    what a core cannot hold (thread names, /proc, the clock)."""
    report = core_report(stuck, debugger)
    live = json.loads(json.dumps(live_report(stuck, Gdb())))
    pop_sources(report, live, debugger)
    for thread in live["threads"]:
        thread["name"] = None
    assert differences(without_clock(report), without_clock(live)) == []


def without_moving_timers(report):
    """The report without what changes between two looks at a waiting process: the time
    left on its timers and, where the program re-arms timers as it waits, their deadlines;
    and when each look was."""
    report = {key: value for key, value in report.items() if key != "taken_at"}
    text = json.dumps(report, sort_keys=True)
    text = re.sub(r'"remaining_secs": -?[0-9.]+', '"remaining_secs": 0', text)
    text = re.sub(r'"since_last_tick_secs": -?[0-9.]+', '"since_last_tick_secs": 0', text)
    text = re.sub(r"until [+-][0-9.]+s", "until +0s", text)
    text = re.sub(r"last tick -?[0-9.]+s ago", "last tick 0s ago", text)
    return json.loads(text)


def rearmed(report):
    """Also without the deadlines of timers the program re-arms."""
    text = json.dumps(report, sort_keys=True)
    text = re.sub(r'"deadline": \{"nanos": [0-9]+, "secs": [0-9]+\}', '"deadline": null', text)
    return json.loads(text)


def test_debuggers_agree_attached(stuck):
    """GDB, LLDB 19 and LLDB 14 attached one after another to the same stuck process give
    the same report."""
    reports = [without_moving_timers(live_report(stuck, debugger)) for debugger in (Gdb(), Lldb(), LLDB_14)]
    if stuck.scenario.rearms_timers:
        reports = [rearmed(report) for report in reports]
    gdb, lldb, lldb14 = reports
    assert differences(lldb, gdb) == []
    assert differences(lldb14, gdb) == []


def test_debuggers_agree_on_the_core(stuck):
    reports = [core_report(stuck, debugger) for debugger in (Gdb(), Lldb(), LLDB_14)]
    assert [report.pop("memory_source") for report in reports] == ["core_file", "core_file", "debugger"]
    assert [report.pop("stack_source") for report in reports] == ["core", "core", "debugger"]
    for report in reports:
        report.pop("taken_at", None)
    gdb, lldb, lldb14 = reports
    assert differences(lldb, gdb) == []
    assert differences(lldb14, gdb) == []

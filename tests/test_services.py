"""Service-shaped tasks (the services-app fixture: an axum server, a reqwest client, a tower
Buffer in front of a ConcurrencyLimit, a tonic gRPC server and clients, streams and their
adapters), in GDB, LLDB 19 and LLDB 14, debug and release. Library futures that no decoder knows are searched structurally down to the
handlers' async fns; hyper connections and streams say what they are doing."""

import re

import pytest
from support.checkpoint import markers_of, run_to_checkpoint

SOURCE = "services-app/src/main.rs"
PROFILES = ["dev", "release"]
COROUTINES = ("async_fn", "async_block", "async_closure")


@pytest.fixture(scope="module")
def markers():
    return markers_of("services-app")


def run_services(debugger, tmp_path, profile, command):
    return run_to_checkpoint(debugger, tmp_path, "services-app", profile, command)


def path_to(node, matches):
    """The nodes from `node` down to the first (depth first) that `matches`, or None."""
    if matches(node):
        return [node]
    for child in node["children"]:
        below = path_to(child, matches)
        if below:
            return [node] + below
    return None


def walk(node):
    yield node
    for child in node["children"]:
        yield from walk(child)


def all_paths(node):
    """Every root-to-leaf path."""
    if not node["children"]:
        return [[node]]
    return [[node] + below for child in node["children"] for below in all_paths(child)]


def function_is(name):
    return lambda node: node["kind"] in COROUTINES and node["function"] == name


def kinds(path):
    return [node["kind"] for node in path]


@pytest.mark.parametrize("profile", PROFILES)
def test_service_tasks_reach_the_users_code(debugger, tmp_path, profile, markers):
    run, facts = run_services(debugger, tmp_path, profile, "async backtrace all --json")
    [report] = run.json_sections()
    tasks = {task["id"]: task for task in report["tasks"]}
    root = {key[len("task."):]: tasks[int(value)]["root"] for key, value in facts.items() if key.startswith("task.")}

    def at_marker(node, marker):
        line, index = markers.awaits[marker]
        assert (node["location"]["file"], node["location"]["line"], node["await_point"]) == (SOURCE, line, index), (marker, node)

    # axum: each in-flight request's connection task runs the handler, three async fns deep.
    for n in (1, 2, 3):
        path = path_to(root["axum_request_%d" % n], function_is("services_app::slow_handler"))
        assert path, "axum_request_%d does not reach slow_handler" % n
        connection = [node for node in path if node["kind"] == "http_server_connection"]
        assert len(connection) == 1, kinds(path)
        assert connection[0]["detail"]["activity"] == "running the service for a request"
        # The handler's future was found in the connection's in-flight slot.
        below_connection = path[path.index(connection[0]) + 1]
        assert below_connection["via"] == "dispatch.in_flight"
        handler = path[-1]
        at_marker(handler, "slow_handler")
        load_user = handler["children"][0]
        assert load_user["function"] == "services_app::load_user"
        at_marker(load_user, "load_user")
        [fetch_record] = load_user["children"]
        assert fetch_record["function"] == "services_app::fetch_record"
        at_marker(fetch_record, "fetch_record")
        assert [child["kind"] for child in fetch_record["children"]] == ["sleep"]
        # Nodes found by the structural search say where they were found.
        assert all(node["via"] for node in path if node["kind"] == "future" and node is not path[0] and "branch" not in node)

    # Idle keep-alive connections wait for the next request and run nothing.
    # Each names its own socket.
    sockets = set()
    for k in (1, 2):
        path = path_to(root["axum_keepalive_%d" % k], lambda node: node["kind"] == "http_server_connection")
        assert path, "axum_keepalive_%d has no HTTP connection" % k
        detail = dict(path[-1]["detail"])
        sockets.add(detail.pop("fd"))
        assert detail == {"activity": "waiting for a request", "reading": "init", "unparsed": 0, "writing": "init"}
        assert path[-1]["children"] == []
    assert len(sockets) == 2 and all(isinstance(fd, int) and fd > 2 for fd in sockets), sockets

    # The accept loop.
    serve = path_to(root["axum_serve"], lambda node: node["kind"] == "io_readiness")
    at_marker(serve[0], "run_server")
    assert serve[-1]["detail"]["operation"] == "accept"

    # reqwest: the request waits for its response from the connection task, which is
    # waiting for the slow server's answer.
    client = root["reqwest_client"]
    at_marker(client, "fetch_report")
    client_path = path_to(client, lambda node: not node["children"])
    assert client_path[-1]["kind"] == "oneshot_recv", client_path[-1]
    # A dependency's own code is named by crate and version, like tokio's.
    reqwest_block = [node for node in client_path if node["kind"] == "async_block" and node["function"].startswith("<reqwest::")]
    assert reqwest_block and re.fullmatch(r"reqwest-[\d.]+/src/async_impl/client\.rs", reqwest_block[0]["location"]["file"])
    connections = [
        path_to(task["root"], lambda node: node["kind"] == "http_client_connection") for task in report["tasks"]
    ]
    [(connection_task, client_connection)] = [
        (task["id"], path[-1]) for task, path in zip(report["tasks"], connections) if path
    ]
    assert client_connection["detail"]["activity"] == "waiting for the response"
    # The request's response channel is the one the connection holds the sender of.
    assert client_connection["detail"]["holds_sender_of"] == client_path[-1]["detail"]["address"]
    assert client_path[-1]["detail"]["sender_task"] == connection_task

    # tower: caller 1's request is in flight inside the concurrency limit; caller 2's waits
    # in the buffer for the worker, which waits for the limit's semaphore.
    caller_1 = root["tower_caller_1"]
    at_marker(caller_1, "call_backend")
    backend = path_to(caller_1, function_is("services_app::backend_call"))
    assert backend, "tower_caller_1 does not reach backend_call"
    at_marker(backend[-1], "backend_call")
    assert [child["kind"] for child in backend[-1]["children"]] == ["sleep"]
    caller_2 = root["tower_caller_2"]
    at_marker(caller_2, "call_backend")
    [queued] = caller_2["children"]
    worker_id = int(facts["task.tower_buffer_worker"])
    assert queued["kind"] == "tower_buffer_response"
    assert queued["detail"]["state"] == "queued" and queued["detail"]["worker_task"] == worker_id
    assert [child["kind"] for child in queued["children"]] == ["oneshot_recv"]
    worker = root["tower_buffer_worker"]
    assert worker["kind"] == "tower_buffer_worker" and worker["detail"]["holds_sender_of"] == queued["detail"]["channel"]
    worker_leaf = path_to(worker, lambda node: node["kind"] == "semaphore_acquire")
    assert worker_leaf and worker_leaf[-1]["detail"]["waiters"] == 1

    # Streams: a StreamMap of two stream! generators, each waiting on its channel.
    subscriber = root["subscriber"]
    at_marker(subscriber, "subscribe_all")
    [stream_map] = subscriber["children"]
    assert stream_map["kind"] == "stream_map"
    assert [child["branch"]["name"] for child in stream_map["children"]] == ["alpha", "beta"]
    for stream in stream_map["children"]:
        assert stream["kind"] == "stream_generator" and stream["boxed"] is True
        [generator] = stream["children"]
        at_marker(generator, "feed")
        assert [child["kind"] for child in generator["children"]] == ["mpsc_recv"]
    adapters = root["stream_adapters"]
    at_marker(adapters, "stream_adapters")
    generator = path_to(adapters, lambda node: node["kind"] == "stream_generator")
    assert generator, "stream_adapters does not reach its stream"
    [body] = generator[-1]["children"]
    at_marker(body, "quiet_stream")
    assert [child["kind"] for child in body["children"]] == ["sleep"]

    # Stream adapters, each down to what it waits on.
    def leaves(node):
        return [path[-1]["kind"] for path in all_paths(node)]

    for task, expected in (
        ("stream_buffered", {"futures_ordered"}),
        ("stream_buffer_unordered", {"futures_unordered"}),
        ("stream_merge", {"mpsc_recv"}),
        ("stream_select", {"mpsc_recv"}),
        ("stream_timeout", {"mpsc_recv", "sleep"}),
        ("stream_forward", {"mpsc_recv"}),
    ):
        at_marker(root[task], task)
        found = [node["kind"] for node in walk(root[task])]
        assert expected <= set(found), (task, found)
    assert leaves(root["stream_merge"]) == leaves(root["stream_select"]) == ["mpsc_recv", "mpsc_recv"]

    # tonic: the unary handler three async fns deep; the streaming handler's stream! body
    # reached through the boxed HTTP bodies; the server's accept loop; the clients waiting
    # for their response and for the next streamed message.
    unary = path_to(root["grpc_unary_server"], function_is("services_app::build_report"))
    assert unary, "grpc_unary_server does not reach build_report"
    at_marker(unary[-2], "grpc_get")
    at_marker(unary[-1], "build_report")
    [query] = unary[-1]["children"]
    at_marker(query, "query_store")
    assert [child["kind"] for child in query["children"]] == ["sleep"]
    streamed = path_to(root["grpc_stream_server"], lambda node: node["kind"] == "stream_generator")
    assert streamed, "grpc_stream_server does not reach its stream"
    [stream_body] = streamed[-1]["children"]
    at_marker(stream_body, "watch_stream")
    accept = path_to(root["grpc_serve"], lambda node: node["kind"] == "io_readiness")
    at_marker(accept[0], "grpc_serve")
    assert accept[-1]["detail"]["operation"] == "accept"
    at_marker(root["grpc_unary_client"], "call_get")
    assert path_to(root["grpc_unary_client"], lambda node: not node["children"])[-1]["kind"] == "oneshot_recv"
    at_marker(root["grpc_stream_client"], "watch_reports")
    message = path_to(root["grpc_stream_client"], lambda node: node["kind"] == "grpc_stream")
    assert message and message[-1]["detail"] == {"direction": "response", "state": "readheader", "message_length": None}
    assert report["errors"] == []


def test_text_folds_library_frames(debugger, tmp_path, markers):
    run, facts = run_services(debugger, tmp_path, "dev", "async backtrace all")
    [text] = run.sections()
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]
    folded = [line for line in lines if "…" in line]
    assert folded and all(re.fullmatch(r"#\d+ … \d+ frames in [\w, ]+", line) for line in folded), folded
    assert any(line.endswith("frames in hyper_util, axum, tower") for line in folded), folded
    handler = "async fn services_app::slow_handler at %s:%d (await #0)" % (SOURCE, markers.await_line("slow_handler"))
    assert sum(1 for line in lines if line.endswith(handler)) == 3
    assert sum(1 for line in lines if re.search(r"HTTP/1 server connection on fd \d+: waiting for a request", line)) == 2
    worker = int(facts["task.tower_buffer_worker"])
    assert "#1 request held by the tower Buffer worker, task %d, until its service is ready" % worker in lines
    held = r"#2 recv on oneshot 0x[0-9a-f]+ \(nothing sent; sender held by task %d\)" % worker
    assert any(re.fullmatch(held, line) for line in lines), held

    run, _ = run_services(debugger, tmp_path, "dev", "async backtrace all full")
    [full] = run.sections()
    assert "…" not in full
    full_lines = [re.sub(r"\s+", " ", line).strip() for line in full.splitlines()]
    assert any(line.startswith("#2 hyper_util::server::conn::auto::UpgradeableConnection<") for line in full_lines)

"""Real clients for the real-world programs (tests/test_realworld.py), on raw sockets: each
protocol's bytes written by hand (RESP, HTTP/1.1, MQTT 3.1.1), and the kernel's view of
the connections (/proc/net/tcp, /proc/PID/fd), which names exactly the descriptor a
program holds for each client and how many bytes wait in each socket's queues."""

import os
import socket
import struct
import threading
import time

# A receive buffer this small (the kernel doubles it) makes a client that never reads
# stall the program's writes after a few hundred KiB, not megabytes.
SMALL_BUFFER = 4096
TCP_STATES = {"01": "established", "0A": "listen"}


def free_port():
    """A TCP port nobody listens on now, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_in_use(port):
    return any(entry["local"] == ("127.0.0.1", port) and entry["state"] == "listen" for entry in tcp_sockets())


def connect(port, receive_buffer=None):
    """A connected client socket; `receive_buffer` is set before the handshake, so the
    window the program sees is small from the start."""
    client = socket.socket()
    if receive_buffer is not None:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    client.settimeout(10)
    client.connect(("127.0.0.1", port))
    return client


def local_port(client):
    return client.getsockname()[1]


def wait_until(condition, what, timeout=30.0, interval=0.05, alive=None):
    """Polls `condition` until it returns a true value (returned), for at most `timeout`
    seconds; `alive`, if given, must stay true (the program has not exited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if alive is not None and not alive():
            raise RuntimeError("the program exited while waiting until %s" % what)
        if time.monotonic() > deadline:
            raise RuntimeError("not reached within %.0fs: %s" % (timeout, what))
        time.sleep(interval)


def wait_listening(port, alive, timeout=60.0):
    wait_until(lambda: port_in_use(port), "something listens on port %d" % port, timeout, alive=alive)


def _address(text):
    host, port = text.split(":")
    packed = bytes.fromhex(host)
    return socket.inet_ntoa(struct.pack("<I", struct.unpack(">I", packed)[0])), int(port, 16)


def tcp_sockets():
    """Every IPv4 TCP socket of this network namespace: local and remote (host, port),
    state, inode, and the bytes in its send queue (not yet acknowledged) and receive queue
    (not yet read by its program)."""
    entries = []
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            tx_queue, rx_queue = (int(part, 16) for part in fields[4].split(":"))
            entries.append({
                "local": _address(fields[1]),
                "remote": _address(fields[2]),
                "state": TCP_STATES.get(fields[3], fields[3]),
                "tx_queue": tx_queue,
                "rx_queue": rx_queue,
                "inode": int(fields[9]),
            })
    return entries


def socket_fds(pid):
    """The process's socket descriptors by inode."""
    fds = {}
    directory = "/proc/%d/fd" % pid
    for name in os.listdir(directory):
        try:
            target = os.readlink(os.path.join(directory, name))
        except FileNotFoundError:
            continue
        if target.startswith("socket:["):
            fds[int(target[len("socket:["):-1])] = int(name)
    return fds


def connection(pid, local, remote):
    """The /proc/net/tcp entry, with the process's fd for it, of the connection whose local
    end (in `pid`) has port `local` and whose remote end has port `remote`; None if the
    process holds no such socket (yet)."""
    fds = socket_fds(pid)
    for entry in tcp_sockets():
        if entry["local"][1] == local and entry["remote"][1] == remote and entry["inode"] in fds:
            return dict(entry, fd=fds[entry["inode"]])
    return None


def fd_of(pid, local, remote):
    """The fd the process holds for that connection (waits until it has accepted it)."""
    return wait_until(lambda: connection(pid, local, remote), "process %d holds %d<->%d" % (pid, local, remote))["fd"]


def listener_fd(pid, port):
    fds = socket_fds(pid)
    [fd] = [fds[e["inode"]] for e in tcp_sockets() if e["local"][1] == port and e["state"] == "listen" and e["inode"] in fds]
    return fd


def connections_of(pid, port):
    """The process's connections whose local end has `port`, by remote port."""
    fds = socket_fds(pid)
    return {e["remote"][1]: dict(e, fd=fds[e["inode"]]) for e in tcp_sockets()
            if e["local"][1] == port and e["state"] == "established" and e["inode"] in fds}


def all_read(pid, local, remote):
    """The program has read everything the peer sent on that connection."""
    entry = connection(pid, local, remote)
    return entry is not None and entry["rx_queue"] == 0


def wait_still(snapshot, what, timeout=60.0, settle=0.5, alive=None):
    """Waits until `snapshot()` (e.g. queue lengths) stays the same over `settle` seconds:
    the data in flight has stopped moving."""
    previous = [snapshot()]

    def settled():
        time.sleep(settle)
        current = snapshot()
        same = current == previous[0]
        previous[0] = current
        return same
    wait_until(settled, what, timeout, interval=0, alive=alive)


def fill(client, chunk=65536, limit=256 << 20):
    """Sends from a non-blocking socket until the kernel takes no more: the peer stopped
    reading and every buffer between is full. Returns the bytes sent."""
    client.setblocking(False)
    sent, data, refused_since = 0, b"x" * chunk, None
    while sent < limit:
        try:
            sent += client.send(data)
            refused_since = None
        except BlockingIOError:
            refused_since = refused_since or time.monotonic()
            # Full for a second on end: whatever drains it has stopped.
            if time.monotonic() - refused_since > 1.0:
                break
            time.sleep(0.02)
    client.settimeout(10)
    return sent


def read_exactly(client, count):
    data = b""
    while len(data) < count:
        piece = client.recv(count - len(data))
        if not piece:
            raise ConnectionError("closed after %d of %d bytes" % (len(data), count))
        data += piece
    return data


def read_until(client, end):
    data = b""
    while not data.endswith(end):
        piece = client.recv(1)
        if not piece:
            raise ConnectionError("closed before %r: %r" % (end, data))
        data += piece
    return data


class SilentService:
    """A TCP service that accepts connections and never reads or writes: what a stuck
    backend looks like to a proxy. Its accepted sockets get a small receive buffer."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.accepted = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def peer_ports(self):
        return [conn.getpeername()[1] for conn in self.accepted]

    def close(self):
        self.listener.close()
        for conn in self.accepted:
            conn.close()


# RESP (Redis's protocol): a command is an array of bulk strings.
def resp(*parts):
    encoded = [part if isinstance(part, bytes) else part.encode() for part in parts]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part) for part in encoded)


# MQTT 3.1.1 control packets.
def _remaining_length(length):
    encoded = b""
    while True:
        byte, length = length % 128, length // 128
        encoded += bytes([byte | (0x80 if length else 0)])
        if not length:
            return encoded


def _mqtt_string(text):
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def mqtt_connect(client_id, keep_alive=0xFFFF):
    """CONNECT with a clean session; keep-alive 0 is refused by rumqttd, so the longest."""
    body = _mqtt_string("MQTT") + bytes([4, 0x02]) + struct.pack(">H", keep_alive) + _mqtt_string(client_id)
    return bytes([0x10]) + _remaining_length(len(body)) + body


def mqtt5_connect(client_id, keep_alive=0xFFFF):
    """MQTT 5's CONNECT: protocol level 5 and an empty property list after the keep-alive."""
    body = _mqtt_string("MQTT") + bytes([5, 0x02]) + struct.pack(">H", keep_alive) + bytes([0]) + _mqtt_string(client_id)
    return bytes([0x10]) + _remaining_length(len(body)) + body


def mqtt_subscribe(packet_id, topic):
    body = struct.pack(">H", packet_id) + _mqtt_string(topic) + bytes([0])
    return bytes([0x82]) + _remaining_length(len(body)) + body


def mqtt_publish(topic, payload):
    """QoS 0 PUBLISH."""
    body = _mqtt_string(topic) + payload
    return bytes([0x30]) + _remaining_length(len(body)) + body


def mqtt_packet(client):
    """One whole packet read from the socket: (type, body)."""
    header = read_exactly(client, 1)[0]
    length, shift = 0, 0
    while True:
        byte = read_exactly(client, 1)[0]
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    return header >> 4, read_exactly(client, length)


def udp_sockets():
    """Every IPv4 UDP socket of this network namespace: local (host, port) and inode."""
    entries = []
    with open("/proc/net/udp") as table:
        next(table)
        for line in table:
            fields = line.split()
            entries.append({"local": _address(fields[1]), "inode": int(fields[9])})
    return entries


def udp_fds(pid, port):
    """The process's descriptors of UDP sockets bound to `port`, lowest first."""
    fds = socket_fds(pid)
    return sorted(fds[entry["inode"]] for entry in udp_sockets() if entry["local"][1] == port and entry["inode"] in fds)


# DNS (RFC 1035): a query of one question, class IN; over TCP each message has a 16-bit
# length before it.
DNS_A, DNS_TXT = 1, 16


def dns_query(ident, name, qtype):
    question = b"".join(bytes([len(label)]) + label.encode() for label in name.rstrip(".").split(".")) + b"\0"
    return struct.pack(">HHHHHH", ident, 0, 1, 0, 0, 0) + question + struct.pack(">HH", qtype, 1)


def dns_framed(message):
    return struct.pack(">H", len(message)) + message


def dns_reply_header(message):
    """(id, rcode, answers) of a reply."""
    ident, flags, _, answers, _, _ = struct.unpack(">HHHHHH", message[:12])
    assert flags & 0x8000, "not a reply"
    return ident, flags & 0xF, answers


def dns_question(message):
    """The name a query asks for, without its final dot."""
    labels, at = [], 12
    while message[at]:
        labels.append(message[at + 1:at + 1 + message[at]].decode())
        at += 1 + message[at]
    return ".".join(labels)


def dns_tcp_reply(client):
    [length] = struct.unpack(">H", read_exactly(client, 2))
    return read_exactly(client, length)


def udp_ports(pid):
    """The process's UDP sockets: the local port of each, by fd."""
    fds = socket_fds(pid)
    return {fds[entry["inode"]]: entry["local"][1] for entry in udp_sockets() if entry["inode"] in fds}


class SilentNameserver:
    """A UDP socket that takes queries and never answers: a nameserver that does not
    reply. Keeps what it received, and from where."""

    def __init__(self):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.received = []
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self):
        while True:
            try:
                self.received.append(self.socket.recvfrom(65535))
            except OSError:
                return

    def close(self):
        self.socket.close()

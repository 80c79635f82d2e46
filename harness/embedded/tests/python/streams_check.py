"""Exec and port-forward through the official Python kubernetes client's WebSocket streams.

Usage: streams_check.py KUBECONFIG SHELL_POD WEB_POD ECHO_PORT. SHELL_POD runs a shell with
busybox; WEB_POD serves /marker over HTTP on port 8080 and echoes bytes on ECHO_PORT. Prints
one JSON object with what each call saw; streams_client.rs asserts on it. Every read is bounded.
"""
import base64
import gzip
import http.client
import json
import select
import sys
import time
from urllib.parse import urlencode

from kubernetes import client, config
from kubernetes.stream import portforward, stream
from kubernetes.stream.ws_client import ERROR_CHANNEL, WSClient, create_websocket

kubeconfig, shell, web, echo_port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
config.load_kube_config(config_file=kubeconfig)
v1 = client.CoreV1Api()
cfg = v1.api_client.configuration
out = {}


def run(command, **kw):
    return stream(v1.connect_get_namespaced_pod_exec, shell, "default", command=command,
                  stderr=True, stdin=False, stdout=True, tty=False, **kw)


# Output read back whole (the client waits for the close, then joins the channels).
out["echo"] = run(["sh", "-c", "echo test string 1"])
out["three_lines"] = len(run(["sh", "-c", "for i in 1 2 3; do echo line $i; done"]).splitlines())
out["gzip"] = gzip.decompress(run(["sh", "-c", "printf 'binary payload' | gzip"], binary=True)).decode()

# Exit codes through returncode (the error channel's Status).
codes = {}
for name, command in [("false", ["false"]), ("exit3", ["sh", "-c", "exit 3"]), ("true", ["true"])]:
    ws = run(command, _preload_content=False)
    ws.run_forever(timeout=20)
    codes[name] = ws.returncode
out["codes"] = codes


def interactive(binary):
    """A shell fed line by line: text frames from str, binary frames from bytes."""
    enc = (lambda s: s.encode()) if binary else (lambda s: s)
    ws = stream(v1.connect_post_namespaced_pod_exec, shell, "default", command=["/bin/sh"],
                stderr=True, stdin=True, stdout=True, tty=False, binary=binary,
                _preload_content=False)
    seen = {"subprotocol": ws.subprotocol}
    ws.write_stdin(enc("echo test string 1\n"))
    seen["stdout"] = ws.readline_stdout(timeout=10)
    ws.write_stdin(enc("echo test string 2 >&2\n"))
    seen["stderr"] = ws.readline_stderr(timeout=10)
    ws.write_stdin(enc("exit\n"))
    deadline = time.time() + 20
    status = ""
    while ws.is_open() and not status and time.time() < deadline:
        ws.update(timeout=1)
        status = ws.read_channel(ERROR_CHANNEL)
    seen["status"] = json.loads(status) if status else None
    ws.run_forever(timeout=10)
    seen["open_after"] = ws.is_open()
    if binary:
        seen = {k: v.decode() if isinstance(v, bytes) else v for k, v in seen.items()}
    return seen


out["interactive_text"] = interactive(False)
out["interactive_binary"] = interactive(True)

# v5 close signal: closing stdin ends `cat`, which exits 0.
ws = stream(v1.connect_post_namespaced_pod_exec, shell, "default", command=["cat"],
            stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
ws.write_stdin("test-close\n")
close = {"subprotocol": ws.subprotocol, "echoed": ws.readline_stdout(timeout=10)}
ws.close_channel(0)
ws.run_forever(timeout=20)
close["open_after"] = ws.is_open()
close["returncode"] = ws.returncode
out["close_stdin"] = close


def exec_url(command, **flags):
    query = [("command", c) for c in command] + [(k, "true") for k in flags]
    return cfg.host.replace("https://", "wss://") + \
        "/api/v1/namespaces/default/pods/%s/exec?%s" % (shell, urlencode(query))


# The kubeconfig's credentials as the client itself sends them (a client certificate goes in
# the TLS options create_websocket builds; a token in this header).
bearer = cfg.auth_settings().get("BearerToken")
auth = {bearer["key"]: bearer["value"]} if bearer else {}

# v4 offered alone: the kubelet's Status wording, the exit code still found by returncode.
ws = WSClient(cfg, exec_url(["sh", "-c", "echo v4 out; exit 5"], stdout=1, stderr=1),
              dict(auth, **{"sec-websocket-protocol": "v4.channel.k8s.io"}), True)
ws.run_forever(timeout=20)
out["v4"] = {"subprotocol": ws.subprotocol, "stdout": ws.read_stdout(), "returncode": ws.returncode}


def raw_frames(protocol, command):
    """Every message of a session on a bare WebSocket from the client's own stack."""
    sock = create_websocket(cfg, exec_url(command, stdout=1, stderr=1),
                            dict(auth, **{"sec-websocket-protocol": protocol}))
    sock.settimeout(20)
    frames = []
    while True:
        opcode, frame = sock.recv_data_frame(True)
        if opcode == 8:  # close
            break
        frames.append({"opcode": opcode, "data": frame.data.decode("latin-1")})
    headers = {k.lower(): v for k, v in (sock.getheaders() or {}).items()}
    sock.close()
    return {"subprotocol": headers.get("sec-websocket-protocol"), "frames": frames}


for protocol in ["v4.base64.channel.k8s.io", "base64.channel.k8s.io", "channel.k8s.io"]:
    seen = raw_frames(protocol, ["sh", "-c", "echo b64 out; echo b64 err >&2; exit 2"])
    if "base64" in protocol:
        for f in seen["frames"]:
            f["channel"] = ord(f["data"][0]) - ord("0")
            f["decoded"] = base64.b64decode(f["data"][1:]).decode()
    out[protocol] = seen

# Port-forward in v4.base64.channel.k8s.io on a bare WebSocket: the two port header frames
# (data and error channel, port little endian), then the echo of what channel 0 carries.
url = cfg.host.replace("https://", "wss://") + \
    "/api/v1/namespaces/default/pods/%s/portforward?ports=%d" % (web, echo_port)
sock = create_websocket(cfg, url, dict(auth, **{"sec-websocket-protocol": "v4.base64.channel.k8s.io"}))
sock.settimeout(20)
headers = [sock.recv_data_frame(True) for _ in range(2)]
sock.send("0" + base64.b64encode(b"base64 forwarded").decode())
opcode, frame = sock.recv_data_frame(True)
out["pf_base64"] = {
    "headers": [[op, f.data.decode()] for op, f in headers],
    "port_from_header": int.from_bytes(base64.b64decode(headers[0][1].data[1:]), "little"),
    "echo": [opcode, frame.data[:1].decode(), base64.b64decode(frame.data[1:]).decode()],
}
sock.close()

# Port-forward: two ports echo, one is closed (its error channel says why).
pf = portforward(v1.connect_get_namespaced_pod_portforward, web, "default",
                 ports="%d,8080,9" % echo_port)
echo = pf.socket(echo_port)
echo.setblocking(True)
rounds = []
for i in range(3):
    sent = b"round %d through the port-forward" % i
    echo.sendall(sent)
    got = b""
    deadline = time.time() + 20
    while got != sent and time.time() < deadline:
        r, _, _ = select.select([echo], [], [], 1)
        if r:
            chunk = echo.recv(1024)
            if not chunk:
                break
            got += chunk
    rounds.append(got.decode())
out["pf_echo"] = rounds
closed = pf.socket(9)
closed.settimeout(20)
out["pf_closed_read"] = closed.recv(1024).decode()
out["pf_closed_error"] = pf.error(9)
conn = http.client.HTTPConnection("web.default.pod", 8080, timeout=20)
conn.sock = pf.socket(8080)
conn.request("GET", "/marker")
resp = conn.getresponse()
out["pf_http"] = {"status": resp.status, "body": resp.read().decode()}
echo.close()
out["pf_errors_of_good_ports"] = [pf.error(echo_port), pf.error(8080)]
pf.close()
deadline = time.time() + 20
while pf.connected and time.time() < deadline:
    time.sleep(0.05)
out["pf_connected_after_close"] = pf.connected
print(json.dumps(out))

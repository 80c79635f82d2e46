"""The official Python kubernetes client (37.x) against the embedded cluster.

Usage: client_check.py KUBECONFIG POD PORT. Prints one JSON object with what each call saw;
the Rust test (python_client.rs) asserts on it. Every call has a bound.
"""
import json
import socket
import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import portforward, stream

kubeconfig, pod, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
config.load_kube_config(config_file=kubeconfig)
v1 = client.CoreV1Api()
out = {}

# Identity of the kubeconfig (the Python client sends its token over http, unlike kubectl).
review = client.AuthenticationV1Api().create_self_subject_review(
    client.V1SelfSubjectReview(metadata=client.V1ObjectMeta())
)
out["user"] = review.status.user_info.username
out["groups"] = review.status.user_info.groups

# List, create, watch.
out["pods"] = sorted(p.metadata.name for p in v1.list_namespaced_pod("default").items)
created = v1.create_namespaced_config_map(
    "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="from-python"), data={"k": "v"})
)
out["created_uid"] = bool(created.metadata.uid)
seen = []
w = watch.Watch()
for event in w.stream(v1.list_namespaced_config_map, "default", timeout_seconds=10):
    seen.append([event["type"], event["object"].metadata.name])
    if event["object"].metadata.name == "from-python":
        w.stop()
out["watch"] = seen

# Exec over WebSocket: stdout, stderr and the exit code from the status channel.
ws = stream(
    v1.connect_get_namespaced_pod_exec, pod, "default",
    command=["sh", "-c", "echo hello-from-exec; echo to-stderr >&2; exit 3"],
    stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
)
ws.run_forever(timeout=30)
out["exec_stdout"] = ws.read_stdout()
out["exec_stderr"] = ws.read_stderr()
out["exec_rc"] = ws.returncode
ws.close()
out["exec_simple"] = stream(
    v1.connect_get_namespaced_pod_exec, pod, "default",
    command=["cat", "/tmp/marker"], stderr=True, stdin=False, stdout=True, tty=False,
)

# Port-forward: an HTTP request to the pod's port through the API server.
pf = portforward(v1.connect_get_namespaced_pod_portforward, pod, "default", ports=str(port))
sock = pf.socket(port)
sock.settimeout(30)
sock.sendall(b"GET /marker HTTP/1.0\r\nHost: pod\r\n\r\n")
data = b""
while True:
    try:
        chunk = sock.recv(4096)
    except socket.timeout:
        break
    if not chunk:
        break
    data += chunk
sock.close()
out["portforward"] = data.decode(errors="replace")

# A ServiceAccount token held to RBAC: Forbidden with a real cluster's message.
v1.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="py-robot")))
token = v1.create_namespaced_service_account_token(
    "py-robot", "default", client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
).status.token
# A configuration of its own: the kubeconfig's host and the cluster CA it verifies, no other
# credentials.
admin_config = client.Configuration.get_default_copy()
robot_config = client.Configuration()
robot_config.host = admin_config.host
robot_config.ssl_ca_cert = admin_config.ssl_ca_cert
robot_config.api_key = {"authorization": "Bearer " + token}
robot = client.CoreV1Api(client.ApiClient(robot_config))
try:
    robot.list_namespaced_secret("default")
    out["robot_secrets"] = "allowed"
except ApiException as e:
    out["robot_secrets"] = {"status": e.status, "body": json.loads(e.body)}

print(json.dumps(out))

"""A termination message read back through the official Python kubernetes client (37.x).

Usage: termination_check.py KUBECONFIG. Creates a pod whose container writes its result to
/dev/termination-log and one that fails with FallbackToLogsOnError, watches until both have
ended (bounded), and prints one JSON object with what the pod statuses said.
"""
import json
import sys

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()


def pod(name, command, policy="File"):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            restart_policy="Never",
            containers=[client.V1Container(
                name="main", image="busybox:1.36", command=["sh", "-c", command],
                termination_message_policy=policy,
            )],
        ),
    )


v1.create_namespaced_pod("default", pod(
    "py-summary",
    "echo working; printf '{\"snapshot_id\":\"5f3a\",\"files_new\":3}' > /dev/termination-log",
))
v1.create_namespaced_pod("default", pod(
    "py-fallback", "echo first; echo last words >&2; exit 4", "FallbackToLogsOnError",
))
out = {}
w = watch.Watch()
for event in w.stream(v1.list_namespaced_pod, "default", timeout_seconds=60):
    p = event["object"]
    if p.status.phase in ("Succeeded", "Failed"):
        term = p.status.container_statuses[0].state.terminated
        out[p.metadata.name] = {
            "phase": p.status.phase, "exit_code": term.exit_code,
            "reason": term.reason, "message": term.message,
            "policy": p.spec.containers[0].termination_message_policy,
            "path": p.spec.containers[0].termination_message_path,
        }
    if len(out) == 2:
        w.stop()
print(json.dumps(out))

"""Error bodies as the official Python kubernetes client (37.x) sees them.

Usage: errors_check.py KUBECONFIG. Creates objects from the multi-document YAML files in
yaml/ with kubernetes.utils.create_from_yaml, some of which already exist, and prints one JSON
object: str() of each FailToCreateError (the client's own rendering of every per-object error),
each aggregated exception's status and body, which objects exist afterwards, and the raw body
of a plain 409 from create_namespaced_config_map.
"""
import json
import os
import sys

from kubernetes import client, config, utils
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
api = client.ApiClient()
core = client.CoreV1Api(api)
apps = client.AppsV1Api(api)
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "yaml")
out = {}


def failures(path):
    try:
        utils.create_from_yaml(api, os.path.join(here, path))
        return {"raised": False}
    except utils.FailToCreateError as e:
        return {
            "raised": True,
            "str": str(e),
            "exceptions": [{"status": x.status, "reason": x.reason, "body": x.body} for x in e.api_exceptions],
        }


out["first"] = failures("service-first.yaml")
out["multi"] = failures("service-and-deployment.yaml")
out["multi_deployment_created"] = apps.read_namespaced_deployment("mock-2", "default").metadata.name
out["triple"] = failures("triple-deployment.yaml")
out["triple_deployment_created"] = apps.read_namespaced_deployment("triple-nginx", "default").metadata.name

core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="twice")))
try:
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="twice")))
    out["configmap_409"] = None
except ApiException as e:
    out["configmap_409"] = {"status": e.status, "reason": e.reason, "body": e.body,
                            "content_type": e.headers.get("Content-Type")}
print(json.dumps(out))

#!/usr/bin/env python3
"""The official `kubernetes` Python client's write verbs against a kuorum node: typed
create, replace, the three patch types (a dict body is a strategic merge patch, a list a
JSON Patch, `content_type` picks merge), the scale subresource, and server-side apply
through the dynamic client, with a conflict between two managers and `force`.

Used by tests/tests/clients_patch_e2e.rs (run with the venv's python3):

    patch_check.py URL NAMESPACE

Each check prints one line `ok <what>`; the first failure raises (exit 1). The last line
is `done <count>`.
"""

import sys

from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

checks = 0


def ok(what, cond, detail=""):
    global checks
    if not cond:
        raise AssertionError(f"{what}: {detail}")
    checks += 1
    print(f"ok {what}", flush=True)


def main():
    url, ns = sys.argv[1], sys.argv[2]
    cfg = client.Configuration()
    cfg.host = url
    api = client.ApiClient(cfg)
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)

    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    cm = core.create_namespaced_config_map(ns, {"metadata": {"name": "py"}, "data": {"a": "1"}})
    ok("create", cm.data == {"a": "1"}, cm)

    cm.data["b"] = "2"
    cm = core.replace_namespaced_config_map("py", ns, cm)
    ok("replace", cm.data == {"a": "1", "b": "2"}, cm)

    cm = core.patch_namespaced_config_map("py", ns, {"data": {"c": "3"}, "metadata": {"labels": {"l": "x"}}})
    ok("strategic patch (dict body)", cm.data == {"a": "1", "b": "2", "c": "3"} and cm.metadata.labels == {"l": "x"}, cm)

    cm = core.patch_namespaced_config_map("py", ns, [{"op": "remove", "path": "/data/a"}])
    ok("json patch (list body)", cm.data == {"b": "2", "c": "3"}, cm)

    cm = core.patch_namespaced_config_map(
        "py", ns, {"data": {"b": None}}, _content_type="application/merge-patch+json"
    )
    ok("merge patch", cm.data == {"c": "3"}, cm)

    try:
        core.patch_namespaced_config_map("py", ns, [{"op": "test", "path": "/data/c", "value": "no"}])
        ok("failed json patch test", False, "no error")
    except ApiException as e:
        ok("failed json patch test is 422", e.status == 422, e)

    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "img:1", "env": [{"name": "A", "value": "1"}]}]},
            },
        },
    }
    apps.create_namespaced_deployment(ns, dep)
    patched = apps.patch_namespaced_deployment(
        "web", ns, {"spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "B", "value": "2"}]}]}}}}
    )
    c = patched.spec.template.spec.containers
    # As kube-apiserver orders it without $setElementOrder: elements new to the list first.
    ok("strategic merge by name", len(c) == 1 and c[0].image == "img:1" and [e.name for e in c[0].env] == ["B", "A"], c)

    scale = apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 4}})
    ok("scale patch answers a Scale", scale.kind == "Scale" and scale.spec.replicas == 4, scale)
    ok("scale reads back", apps.read_namespaced_deployment_scale("web", ns).spec.replicas == 4)
    ok("deployment scaled", apps.read_namespaced_deployment("web", ns).spec.replicas == 4)

    dyn = dynamic.DynamicClient(api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns}, "data": {"k": "one"}}
    got = cms.server_side_apply(body=body, namespace=ns, field_manager="first")
    ok("server-side apply creates", got.data.k == "one", got)
    body["data"]["k"] = "two"
    try:
        cms.server_side_apply(body=body, namespace=ns, field_manager="second")
        ok("apply conflict", False, "no conflict")
    except ApiException as e:
        ok("apply conflict is 409", e.status == 409 and "conflict with \\\"first\\\"" in e.body, e.body)
    got = cms.server_side_apply(body=body, namespace=ns, field_manager="second", force_conflicts=True)
    ok("force takes the field", got.data.k == "two", got)
    owners = [m.manager for m in got.metadata.managedFields]
    ok("managedFields name the new owner", "second" in owners and "first" not in owners, owners)

    print(f"done {checks}", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Regenerates crates/schema/k8s/definitions.json: the Kubernetes 1.37 schema definitions
kuorum serves, with their x-kubernetes-* metadata (patch strategies, merge keys, list
types, map types, group-version-kinds).

Source: the `_definitions.json` that the PyPI package kubernetes-validate 1.37.0 ships
(Kubernetes' own OpenAPI definitions, Apache-2.0). Only the definitions reachable from the
roots are kept: every GA kind of Kubernetes 1.37 (crates/api/tests/golden/
kube-1.37-ga-discovery.json), its list and the kinds its subresources take, and the meta types below, rewritten into OpenAPI v3 component form:
- `$ref: /api/_definitions.json#/$defs/X` -> `#/components/schemas/X`, and a `$ref` with
  sibling keys (a property's description or patch metadata) -> `allOf: [{$ref}]` + siblings,
  the shape kube-apiserver's /openapi/v3 uses;
- `type: [T, "null"]` -> `type: T`;
- the `enum` the validator adds to apiVersion and kind is dropped.

Usage: python3 scripts/gen-schemas.py   (needs pip and network; the output is committed)
"""
import json, os, subprocess, sys, tempfile, zipfile

VERSION = "1.37.0"
ROOTS = [
    "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.Event", "io.k8s.api.core.v1.Namespace",
    "io.k8s.api.core.v1.Node", "io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.Secret",
    "io.k8s.api.core.v1.ServiceAccount", "io.k8s.api.core.v1.Service",
    "io.k8s.api.apps.v1.Deployment", "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent", "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.api.rbac.v1.Role", "io.k8s.api.rbac.v1.RoleBinding", "io.k8s.api.rbac.v1.ClusterRole",
    "io.k8s.api.rbac.v1.ClusterRoleBinding", "io.k8s.api.rbac.v1.RoleList", "io.k8s.api.rbac.v1.RoleBindingList",
    "io.k8s.api.rbac.v1.ClusterRoleList", "io.k8s.api.rbac.v1.ClusterRoleBindingList",
    "io.k8s.api.authorization.v1.SelfSubjectAccessReview", "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
    "io.k8s.api.authentication.v1.SelfSubjectReview",
]
LISTS = ["ConfigMap", "Event", "Namespace", "Node", "Pod", "Secret", "ServiceAccount", "Service"]
ROOTS += [f"io.k8s.api.core.v1.{k}List" for k in LISTS]
ROOTS += ["io.k8s.api.apps.v1.DeploymentList", "io.k8s.api.coordination.v1.LeaseList",
          "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionList"]
PREFIX = "/api/_definitions.json#/$defs/"
GOLDEN = os.path.join(os.path.dirname(__file__), "..", "crates", "api", "tests", "golden",
                      "kube-1.37-ga-discovery.json")


def ga_roots(defs):
    """The definitions of every GA kind of the golden discovery, of their lists, and of the
    kinds their subresources take (TokenRequest, Eviction, Scale, the kubelet's options)."""
    wanted = set()
    for r in json.load(open(GOLDEN)):
        wanted.add((r["group"], r["version"], r["kind"]))
        wanted.add((r["group"], r["version"], r["kind"] + "List"))
        for sub in r["subresources"]:
            wanted.add((sub["group"], sub["version"], sub["kind"]))
    roots = []
    for name, d in defs.items():
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            if (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")) in wanted:
                roots.append(name)
    return roots


def load():
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", d,
                        f"kubernetes-validate=={VERSION}"], check=True)
        whl = [f for f in os.listdir(d) if f.endswith(".whl")][0]
        with zipfile.ZipFile(os.path.join(d, whl)) as z:
            path = f"kubernetes_validate/kubernetes-json-schema/v{VERSION}-local/_definitions.json"
            return json.loads(z.read(path))["$defs"]


def ref_name(ref):
    for p in (PREFIX, "#/$defs/"):
        if ref.startswith(p):
            return ref[len(p):]
    raise ValueError(ref)


def rewrite(node, refs):
    if isinstance(node, list):
        return [rewrite(x, refs) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k == "type" and isinstance(v, list):
            ts = [t for t in v if t != "null"]
            v = ts[0] if len(ts) == 1 else ts
        out[k] = v if k == "$ref" and isinstance(v, str) else rewrite(v, refs)
    if isinstance(out.get("$ref"), str):
        name = ref_name(out.pop("$ref"))
        refs.add(name)
        target = {"$ref": "#/components/schemas/" + name}
        if not out:
            return target
        out["allOf"] = [target]
    return out


def main():
    defs = load()
    keep, todo = {}, sorted(set(ROOTS) | set(ga_roots(defs)))
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        refs = set()
        schema = rewrite(defs[name], refs)
        for field in ("apiVersion", "kind"):
            prop = schema.get("properties", {}).get(field)
            if isinstance(prop, dict):
                prop.pop("enum", None)
        keep[name] = schema
        todo.extend(sorted(refs))
    out = os.path.join(os.path.dirname(__file__), "..", "crates", "schema", "k8s", "definitions.json")
    with open(out, "w") as f:
        json.dump({"kubernetesVersion": VERSION, "source": f"PyPI kubernetes-validate {VERSION}",
                   "schemas": dict(sorted(keep.items()))}, f, indent=None, separators=(",", ":"), sort_keys=False)
        f.write("\n")
    print(f"{len(keep)} definitions -> {os.path.normpath(out)}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Watch ConfigMaps in one namespace with the official `kubernetes` client and print each
event as one JSON line on stdout: {"type", "name", "rv", "data"}.

Used by tests/tests/watch_clients.rs (run with the venv's python3):

    watch_check.py URL NAMESPACE [--resource-version RV] [--timeout-seconds N]
                   [--stop-at NAME] [--bookmarks]

- `--resource-version`: start the watch there (events after RV); without it the server
  sends the current state as ADDED events first.
- `--stop-at NAME`: stop (exit 0) right after the first event for object NAME.
- `--timeout-seconds`: passed to the server (`timeoutSeconds`); the stream then ends and
  the script exits (the client does not re-watch when a timeout is given).

The last line is {"type": "END", "reason": "stop-at" | "stream-ended"}. Errors (an ERROR
event, an HTTP error) go to stderr and exit 1.
"""

import argparse
import json
import sys

from kubernetes import client, watch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("namespace")
    p.add_argument("--resource-version")
    p.add_argument("--timeout-seconds", type=int, default=30)
    p.add_argument("--stop-at")
    p.add_argument("--bookmarks", action="store_true")
    a = p.parse_args()

    cfg = client.Configuration()
    cfg.host = a.url
    v1 = client.CoreV1Api(client.ApiClient(cfg))

    kwargs = {"timeout_seconds": a.timeout_seconds}
    if a.resource_version is not None:
        kwargs["resource_version"] = a.resource_version
    if a.bookmarks:
        kwargs["allow_watch_bookmarks"] = True

    w = watch.Watch()
    reason = "stream-ended"
    for ev in w.stream(v1.list_namespaced_config_map, a.namespace, **kwargs):
        if ev["type"] == "BOOKMARK":
            raw = ev["raw_object"]
            line = {"type": "BOOKMARK", "rv": raw.get("metadata", {}).get("resourceVersion")}
        else:
            obj = ev["object"]  # a typed V1ConfigMap
            line = {
                "type": ev["type"],
                "name": obj.metadata.name,
                "namespace": obj.metadata.namespace,
                "rv": obj.metadata.resource_version,
                "data": obj.data or {},
            }
        print(json.dumps(line), flush=True)
        if a.stop_at is not None and line.get("name") == a.stop_at:
            w.stop()
            reason = "stop-at"
            break
    print(json.dumps({"type": "END", "reason": reason, "last_rv": w.resource_version}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report anything to the test
        print("watch_check.py: %s: %s" % (type(e).__name__, e), file=sys.stderr, flush=True)
        sys.exit(1)

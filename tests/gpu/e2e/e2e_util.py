#!/usr/bin/env python3
"""Helpers of tests/gpu/e2e.sh (one subcommand each):

  grant-sh GRANT.json     the bash lines that apply a grant to the process that runs them, as a
                          container runtime would: bind mounts (e2e.sh runs them in a private
                          mount namespace, unshare -m), then the grant's environment. GRANT.json is
                          vgpu-e2e-kubelet's admit answer (envs, mounts, devices) or a CDI spec the
                          manager wrote (containerEdits: env, mounts, deviceNodes).
  grant-env GRANT.json KEY the value of one variable of the grant's environment
  metric URL NAME K=V...  the value of one sample of the manager's /metrics (the first whose labels
                          include every K=V); nothing if none
  control SOCKET JSON     one request to the manager's control API; prints the answer
"""
import json
import shlex
import socket
import sys
import urllib.request


def grant_edits(g):
    """(envs dict, mounts [(host, container, ro)]) of either grant format."""
    if "containerEdits" in g or "devices" in g and g.get("cdiVersion"):
        dev = g["devices"][0]["containerEdits"] if "devices" in g else g["containerEdits"]
        envs = dict(e.split("=", 1) for e in dev.get("env", []))
        mounts = [(m["hostPath"], m["containerPath"], "ro" in m.get("options", []))
                  for m in dev.get("mounts", [])]
        return envs, mounts
    return g["envs"], [(m["host"], m["container"], m["ro"]) for m in g.get("mounts", [])]


def grant_sh(path):
    envs, mounts = grant_edits(json.load(open(path)))
    q = shlex.quote
    out = ["set -e"]
    for host, ctr, ro in mounts:
        # The mount point is made on the machine's own file system (a container's would be in its
        # image); the bind itself exists only in this process's mount namespace.
        out.append(f"if [ -d {q(host)} ]; then mkdir -p {q(ctr)}; else "
                   f"mkdir -p \"$(dirname {q(ctr)})\"; [ -e {q(ctr)} ] || : > {q(ctr)}; fi")
        out.append(f"mount --bind {q(host)} {q(ctr)}")
        if ro:
            out.append(f"mount -o remount,bind,ro {q(ctr)}")
    for k, v in sorted(envs.items()):
        out.append(f"export {k}={q(v)}")
    out.append("set +e")
    print("\n".join(out))


def grant_env(path, key):
    print(grant_edits(json.load(open(path)))[0].get(key, ""))


def metric(url, name, *want):
    want = dict(w.split("=", 1) for w in want)
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        labels = {}
        if "{" in head:
            for part in head[head.index("{") + 1:head.rindex("}")].split('",'):
                k, _, v = part.partition("=")
                labels[k.strip()] = v.strip().strip('"')
        if all(labels.get(k) == v for k, v in want.items()):
            print(value)
            return


def control(path, request):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(request.encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    print(data.decode().strip())


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"grant-sh": grant_sh, "grant-env": grant_env, "metric": metric, "control": control}[cmd](*args)

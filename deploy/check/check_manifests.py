#!/usr/bin/env python3
"""Renders every vgpu Kustomize overlay with `kubectl kustomize` and checks what users would
apply: kinds, required fields, the host mounts the manager needs, image names (each with a
recipe under deploy/images/), RBAC, resource names of the examples and, when the manager binary
is given, that every flag the manifests pass is one the manager knows.

usage: check_manifests.py DEPLOY_DIR [--manager-bin PATH]
exit: 0 all checks pass, 1 a check failed (each failure printed) or a tool is missing (kubectl,
PyYAML): a fresh machine without them must fail here, not pass by skipping.
"""
import json
import os
import re
import shutil
import subprocess
import sys

# kubectl with Kustomize v3 or later: the overlays use `patches:` with a target and directories
# under `resources:`. Debian 12's own kubernetes-client (kubectl 1.20, Kustomize v2.0.3) cannot
# render them; see README.md ("Dependencies") for where `make deps` expects kubectl from.
MISSING_TOOL = 1
try:
    import yaml
except ImportError:
    print("FAIL: PyYAML missing (apt-get install python3-yaml; make deps installs it)")
    sys.exit(MISSING_TOOL)

RESOURCES = {"tencent.com/vcuda-core", "tencent.com/vcuda-memory", "tencent.com/vcuda-gpu"}
IMAGE_RE = re.compile(r"^ghcr\.io/vgpu/(vgpu-[a-z0-9-]+):([0-9][0-9A-Za-z.+-]*)$")
NAMESPACED = {"ServiceAccount", "DaemonSet", "Service", "ConfigMap", "Pod"}
# Host paths the manager must see at the same path (it hands them to the kubelet or keeps state
# there): device-plugin sockets, pod-resources socket, control socket + vdriver tree, slot dirs
# and ledgers (a tmpfs: /run), checkpoint (a disk: it must outlive a reboot).
SAME_PATH_MOUNTS = ["/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources",
                    "/etc/vgpu-manager/vm", "/run/vgpu-manager", "/etc/vgpu-manager/checkpoint"]
OTHER_HOST_MOUNTS = {"/dev": "/dev", "/sys": "/sys", "/": "/host"}  # host path -> mount path
OVERLAYS = {"module": {"enforcement": "auto", "installer": True},
            "shim": {"enforcement": "shim", "installer": False},
            "dra": {"enforcement": "auto", "installer": True}}
DRA_DRIVER = "gpu.vgpu.io"
# DRA mode: the kubelet's plugin directories and the CDI spec directory, same path on the host.
DRA_MOUNTS = ["/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins", "/var/run/cdi"]
# Exactly what the DRA plugin calls in resource.k8s.io (daemon/dra), nothing more.
DRA_RULES = {"resourceclaims": {"get"}, "resourceslices": {"list", "create", "update", "delete"}}

failures = []


def fail(where, msg):
    failures.append(f"{where}: {msg}")


def render(kubectl, path):
    r = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True)
    if r.returncode != 0:
        fail(path, "kubectl kustomize failed: " + r.stderr.strip())
        return []
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def find(docs, kind, name=None):
    return [d for d in docs if d.get("kind") == kind and
            (name is None or d.get("metadata", {}).get("name") == name)]


def check_common(where, docs):
    for d in docs:
        meta = d.get("metadata", {})
        ident = f"{where} {d.get('kind')}/{meta.get('name')}"
        for field in ("apiVersion", "kind"):
            if not d.get(field):
                fail(ident, f"missing {field}")
        if not meta.get("name"):
            fail(ident, "missing metadata.name")
        if d.get("kind") in NAMESPACED and not meta.get("namespace"):
            fail(ident, "namespaced object without metadata.namespace")


def pod_spec_images(spec):
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        yield c.get("name"), c.get("image", "")


def check_images(where, docs, images_dir, used):
    for ds in find(docs, "DaemonSet"):
        for cname, image in pod_spec_images(ds["spec"]["template"]["spec"]):
            m = IMAGE_RE.match(image)
            if not m:
                fail(f"{where} {ds['metadata']['name']}/{cname}",
                     f"image '{image}' is not ghcr.io/vgpu/vgpu-<name>:<version>")
                continue
            used.add(m.group(1))
            recipe = os.path.join(images_dir, m.group(1)[len("vgpu-"):], "Dockerfile")
            if not os.path.isfile(recipe):
                fail(f"{where} {ds['metadata']['name']}/{cname}", f"no image recipe {recipe}")


def volumes_by_name(spec):
    return {v["name"]: v for v in spec.get("volumes", [])}


def check_mounts_resolve(ident, spec):
    vols = volumes_by_name(spec)
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        for m in c.get("volumeMounts", []):
            if m["name"] not in vols:
                fail(ident, f"container {c['name']} mounts undefined volume {m['name']}")


def host_mounts(spec, container):
    vols = volumes_by_name(spec)
    out = {}
    for m in container.get("volumeMounts", []):
        v = vols.get(m["name"], {})
        if "hostPath" in v:
            out[v["hostPath"]["path"]] = m
    return out


def check_daemonset_basics(ident, ds):
    spec = ds["spec"]["template"]["spec"]
    if spec.get("priorityClassName") != "system-node-critical":
        fail(ident, "priorityClassName must be system-node-critical")
    if not spec.get("nodeSelector"):
        fail(ident, "no nodeSelector")
    keys = {t.get("key") for t in spec.get("tolerations", [])}
    for key in ("CriticalAddonsOnly", "nvidia.com/gpu"):
        if key not in keys:
            fail(ident, f"no toleration for {key}")
    sel = ds["spec"]["selector"].get("matchLabels", {})
    labels = ds["spec"]["template"]["metadata"].get("labels", {})
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        fail(ident, "selector does not match the pod template labels")
    check_mounts_resolve(ident, spec)


def flag_args(container):
    out = {}
    for a in container.get("args", []):
        if a.startswith("--"):
            k, _, v = a[2:].partition("=")
            if k in out:
                fail(container["name"], f"flag --{k} given twice")
            out[k] = v
    return out


def check_manager(where, docs, overlay, known_flags):
    dss = find(docs, "DaemonSet", "vgpu-manager")
    if len(dss) != 1:
        fail(where, "expected one DaemonSet vgpu-manager")
        return
    ds = dss[0]
    ident = f"{where} DaemonSet/vgpu-manager"
    check_daemonset_basics(ident, ds)
    spec = ds["spec"]["template"]["spec"]
    manager = next((c for c in spec["containers"] if c["name"] == "manager"), None)
    if manager is None:
        fail(ident, "no container named manager")
        return
    if not manager.get("securityContext", {}).get("privileged"):
        fail(ident, "manager must be privileged (device nodes, genl admin commands)")
    mounts = host_mounts(spec, manager)
    for path in SAME_PATH_MOUNTS:
        m = mounts.get(path)
        if m is None:
            fail(ident, f"no hostPath mount of {path}")
        elif m["mountPath"] != path:
            fail(ident, f"{path} mounted at {m['mountPath']}; must be the same path")
        elif m.get("readOnly"):
            fail(ident, f"{path} must be writable")
    for host, mount in OTHER_HOST_MOUNTS.items():
        m = mounts.get(host)
        if m is None or m["mountPath"] != mount:
            fail(ident, f"host {host} must be mounted at {mount}")
    flags = flag_args(manager)
    if flags.get("slot-path") != "/run/vgpu-manager" or \
            flags.get("checkpoint-path") != "/etc/vgpu-manager/checkpoint":
        fail(ident, "--slot-path=/run/vgpu-manager (tmpfs) and "
                    "--checkpoint-path=/etc/vgpu-manager/checkpoint (disk) expected")
    if flags.get("enforcement") != OVERLAYS[overlay]["enforcement"]:
        fail(ident, f"--enforcement should be {OVERLAYS[overlay]['enforcement']}, "
                    f"got {flags.get('enforcement')}")
    # The manager publishes the enforcement in force itself (daemon/manager/enforcement.h) and
    # refuses --node-labels that set its keys: a static flag could lie (security review F11.6).
    for kv in flags.get("node-labels", "").split(","):
        if kv.split("=")[0] in ("vgpu.io/enforcement", "vgpu.io/enforcement-hard",
                                "vgpu.io/module-install", "vgpu.io/deployment"):
            fail(ident, f"--node-labels sets {kv.split('=')[0]}, which the manager owns")
    if OVERLAYS[overlay]["installer"]:
        state = flags.get("module-state-file", "")
        if not state or os.path.dirname(state) not in [m["mountPath"] for m in
                                                       manager.get("volumeMounts", [])]:
            fail(ident, "--module-state-file must name the installer's state file in a mount")
    shim = flags.get("shim-library", "")
    if not shim or os.path.dirname(shim) not in mounts or \
            mounts[os.path.dirname(shim)]["mountPath"] != os.path.dirname(shim):
        fail(ident, "--shim-library must sit in a hostPath mounted at the same path")
    if flags.get("incluster-mode") != "true":
        fail(ident, "--incluster-mode=true needed for node labels")
    sa = spec.get("serviceAccountName")
    if not find(docs, "ServiceAccount", sa):
        fail(ident, f"serviceAccountName {sa} is not in the render")
    port = next((p["containerPort"] for p in manager.get("ports", []) if p.get("name") == "metrics"), None)
    if port is None or flags.get("query-port") != str(port):
        fail(ident, f"--query-port ({flags.get('query-port')}) must equal the metrics port ({port})")
    svc = find(docs, "Service", "vgpu-manager-metrics")
    if not svc or svc[0]["spec"]["ports"][0].get("targetPort") != "metrics":
        fail(where, "Service vgpu-manager-metrics must target the metrics port")
    # The volume config the manager reads must be a ConfigMap of this render, with a valid body.
    conf = flags.get("volume-config", "")
    vols = volumes_by_name(spec)
    cm_mount = next((m for m in manager.get("volumeMounts", [])
                     if conf.startswith(m["mountPath"] + "/")), None)
    cm_name = vols.get(cm_mount["name"], {}).get("configMap", {}).get("name") if cm_mount else None
    cms = find(docs, "ConfigMap", cm_name) if cm_name else []
    if not cms:
        fail(ident, f"--volume-config {conf} is not a mounted ConfigMap of this render")
    else:
        body = cms[0].get("data", {}).get(os.path.basename(conf))
        try:
            vc = json.loads(body or "")
            for v in vc["volume"]:
                if not v["base"].startswith("/etc/vgpu-manager/vm/"):
                    fail(ident, f"volume {v['name']} base {v['base']} is outside the vm mount")
        except (ValueError, KeyError, TypeError) as e:
            fail(ident, f"volume.conf is not valid: {e}")
    if known_flags is not None:
        for c in [manager]:
            for k in flag_args(c):
                if k not in known_flags:
                    fail(ident, f"--{k} is not a flag of this vgpu-manager")


def check_installer(where, docs, manager_docs):
    dss = find(docs, "DaemonSet", "vgpu-module-installer")
    if len(dss) != 1:
        fail(where, "expected one DaemonSet vgpu-module-installer")
        return
    ident = f"{where} DaemonSet/vgpu-module-installer"
    check_daemonset_basics(ident, dss[0])
    spec = dss[0]["spec"]["template"]["spec"]
    c = spec["containers"][0]
    if not c.get("securityContext", {}).get("privileged"):
        fail(ident, "installer must be privileged (it loads a module)")
    mounts = host_mounts(spec, c)
    for host in ("/lib/modules", "/usr/src", "/run/vgpu"):
        if host not in mounts:
            fail(ident, f"no hostPath mount of {host}")
    if "/lib/modules" in mounts and mounts["/lib/modules"].get("readOnly"):
        fail(ident, "/lib/modules must be writable (dkms install)")
    mgr = find(manager_docs, "DaemonSet", "vgpu-manager")
    if mgr and "/run/vgpu" not in host_mounts(mgr[0]["spec"]["template"]["spec"],
                                              mgr[0]["spec"]["template"]["spec"]["containers"][0]):
        fail(ident, "the manager does not mount /run/vgpu, where the installer reports")


def check_rbac(where, docs):
    roles = find(docs, "ClusterRole", "vgpu-manager")
    if not roles:
        fail(where, "no ClusterRole vgpu-manager")
    else:
        verbs = set()
        for rule in roles[0].get("rules", []):
            if "nodes" in rule.get("resources", []) and "" in rule.get("apiGroups", []):
                verbs.update(rule.get("verbs", []))
        if not {"get", "patch"} <= verbs:
            fail(where, f"ClusterRole must allow nodes get and patch, has {sorted(verbs)}")
    binds = find(docs, "ClusterRoleBinding")
    sas = {(d["metadata"]["name"], d["metadata"].get("namespace")) for d in find(docs, "ServiceAccount")}
    if not any(b["roleRef"]["name"] == "vgpu-manager" and
               any((s["name"], s.get("namespace")) in sas for s in b.get("subjects", []))
               for b in binds):
        fail(where, "no ClusterRoleBinding of vgpu-manager to a ServiceAccount of this render")


def check_examples(where, docs):
    pods = find(docs, "Pod")
    if len(pods) < 2:
        fail(where, "expected a fractional and a whole-GPU example pod")
    kinds_seen = set()
    for p in pods:
        for c in p["spec"]["containers"]:
            limits = c.get("resources", {}).get("limits", {})
            vgpu = {k: v for k, v in limits.items() if k.startswith("tencent.com/")}
            for k, v in vgpu.items():
                if k not in RESOURCES:
                    fail(f"{where} Pod/{p['metadata']['name']}", f"unknown resource {k}")
                if not isinstance(v, int) or v <= 0:
                    fail(f"{where} Pod/{p['metadata']['name']}", f"{k} must be a positive integer")
            if ("tencent.com/vcuda-core" in vgpu) != ("tencent.com/vcuda-memory" in vgpu):
                fail(f"{where} Pod/{p['metadata']['name']}", "vcuda-core and vcuda-memory go together")
            if vgpu.get("tencent.com/vcuda-core", 0) > 100:
                fail(f"{where} Pod/{p['metadata']['name']}", "vcuda-core above 100 (one GPU)")
            if "tencent.com/vcuda-memory" in vgpu:
                kinds_seen.add("fractional")
            if "tencent.com/vcuda-gpu" in vgpu:
                kinds_seen.add("whole")
    if kinds_seen != {"fractional", "whole"}:
        fail(where, f"examples cover {sorted(kinds_seen)}; need fractional and whole")


def check_dra(where, docs):
    ds = find(docs, "DaemonSet", "vgpu-manager")
    if not ds:
        return
    spec = ds[0]["spec"]["template"]["spec"]
    manager = spec["containers"][0]
    flags = flag_args(manager)
    if flags.get("kubelet-api") != "dra" or flags.get("dra-driver-name") != DRA_DRIVER:
        fail(where, f"--kubelet-api=dra --dra-driver-name={DRA_DRIVER} expected, got {flags}")
    mounts = host_mounts(spec, manager)
    for path in DRA_MOUNTS:
        if path not in mounts or mounts[path]["mountPath"] != path or mounts[path].get("readOnly"):
            fail(where, f"{path} must be a writable hostPath mount at the same path")
    if flags.get("cdi-spec-dir") != "/var/run/cdi" or flags.get("kubelet-dir") != "/var/lib/kubelet":
        fail(where, "--cdi-spec-dir=/var/run/cdi and --kubelet-dir=/var/lib/kubelet expected")
    roles = find(docs, "ClusterRole", "vgpu-manager-dra")
    rules = {}
    for rule in (roles[0].get("rules", []) if roles else []):
        if rule.get("apiGroups") != ["resource.k8s.io"]:
            fail(where, f"vgpu-manager-dra grants outside resource.k8s.io: {rule}")
        for r in rule.get("resources", []):
            rules.setdefault(r, set()).update(rule.get("verbs", []))
    if rules != DRA_RULES:
        fail(where, f"vgpu-manager-dra must grant exactly {DRA_RULES}, grants {rules}")
    if not any(b["roleRef"]["name"] == "vgpu-manager-dra" for b in find(docs, "ClusterRoleBinding")):
        fail(where, "no ClusterRoleBinding of vgpu-manager-dra")
    classes = {d["metadata"]["name"]: d for d in find(docs, "DeviceClass")}
    for name, kind in (("gpu-share.vgpu.io", "share"), ("gpu-whole.vgpu.io", "whole")):
        expr = " ".join(s.get("cel", {}).get("expression", "")
                        for s in classes.get(name, {}).get("spec", {}).get("selectors", []))
        if f'device.driver == "{DRA_DRIVER}"' not in expr or f'== "{kind}"' not in expr:
            fail(where, f"DeviceClass {name} must select {DRA_DRIVER} devices of type {kind}")


def check_dra_examples(where, docs):
    templates = {d["metadata"]["name"]: d for d in find(docs, "ResourceClaimTemplate")}
    classes_used = set()
    for t in templates.values():
        for r in t["spec"]["spec"]["devices"]["requests"]:
            exact = r.get("exactly", {})
            classes_used.add(exact.get("deviceClassName"))
            caps = exact.get("capacity", {}).get("requests", {})
            if exact.get("deviceClassName") == "gpu-share.vgpu.io" and set(caps) != {"memory", "cores"}:
                fail(where, f"template {t['metadata']['name']}: a share asks for memory and cores")
    if classes_used != {"gpu-share.vgpu.io", "gpu-whole.vgpu.io"}:
        fail(where, f"templates use classes {sorted(map(str, classes_used))}; need share and whole")
    for p in find(docs, "Pod"):
        claims = {c["name"]: c.get("resourceClaimTemplateName") for c in p["spec"].get("resourceClaims", [])}
        if not claims or any(t not in templates for t in claims.values()):
            fail(f"{where} Pod/{p['metadata']['name']}", "must claim through a template of this render")
        for c in p["spec"]["containers"]:
            if not {x["name"] for x in c.get("resources", {}).get("claims", [])} <= set(claims):
                fail(f"{where} Pod/{p['metadata']['name']}", "container uses an undeclared claim")
    if len(find(docs, "Pod")) < 2:
        fail(where, "expected a fractional and a whole-GPU DRA example pod")


def manager_flags(binary):
    r = subprocess.run([binary, "--help"], capture_output=True, text=True)
    text = r.stdout + r.stderr
    return set(re.findall(r"--([a-z][a-z0-9-]*)", text))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    deploy = os.path.abspath(sys.argv[1])
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("FAIL: no kubectl on PATH: the overlays cannot be rendered. Install kubectl 1.21 or "
              "later (README.md, Dependencies); Debian 12's kubernetes-client is too old.")
        return MISSING_TOOL
    known_flags = None
    if "--manager-bin" in sys.argv:
        binary = sys.argv[sys.argv.index("--manager-bin") + 1]
        if os.access(binary, os.X_OK):
            known_flags = manager_flags(binary)
    images_dir = os.path.join(deploy, "images")
    used_images = set()
    rendered = {}
    for overlay in OVERLAYS:
        where = f"overlays/{overlay}"
        docs = render(kubectl, os.path.join(deploy, where))
        rendered[overlay] = docs
        if not docs:
            continue
        check_common(where, docs)
        check_images(where, docs, images_dir, used_images)
        check_rbac(where, docs)
        check_manager(where, docs, overlay, known_flags)
        if overlay == "dra":
            check_dra(where, docs)
        if OVERLAYS[overlay]["installer"]:
            check_installer(where, docs, docs)
        elif find(docs, "DaemonSet", "vgpu-module-installer"):
            fail(where, "shim mode must not install the module")
        print(f"{where}: {len(docs)} objects: " +
              ", ".join(sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)))
    dra_examples = render(kubectl, os.path.join(deploy, "overlays", "dra", "examples"))
    check_common("overlays/dra/examples", dra_examples)
    check_dra_examples("overlays/dra/examples", dra_examples)
    docs = render(kubectl, os.path.join(deploy, "examples"))
    check_common("examples", docs)
    check_examples("examples", docs)
    for name in sorted(os.listdir(images_dir)):
        if f"vgpu-{name}" not in used_images:
            fail("images", f"recipe images/{name} is used by no overlay")
    grafana = os.path.join(deploy, "grafana", "vgpu-dashboard.json")
    try:
        with open(grafana) as f:
            dash = json.load(f)
        exprs = " ".join(t.get("expr", "") for p in dash.get("panels", []) for t in p.get("targets", []))
        for metric in ("vgpu_slot_memory_charged_bytes", "vgpu_slot_core_achieved_ratio",
                       "vgpu_gpu_healthy", "vgpu_slot_memory_denials_total"):
            if metric not in exprs:
                fail("grafana", f"dashboard has no panel on {metric}")
    except (OSError, ValueError) as e:
        fail("grafana", f"{grafana}: {e}")
    print(f"flags checked against the manager binary: {'yes' if known_flags else 'no'}")
    if failures:
        for f in failures:
            print("FAIL " + f)
        return 1
    print("all deploy checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

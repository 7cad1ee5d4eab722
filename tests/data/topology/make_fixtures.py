#!/usr/bin/env python3
"""Writes the hand-made machine-shape fixtures of this folder (vgpu-topology/1 JSON).

The shapes follow public descriptions of real machines; bus ids, NUMA layout and CPU lists are
typical of those machines, not recorded from one. Recorded machines (h200-*.json) come from
tests/gpu/extra.d/topology.sh instead. Run from anywhere: python3 make_fixtures.py
"""
import json
import os

MIB = 1024 * 1024
HERE = os.path.dirname(os.path.abspath(__file__))


def gpu(index, bus, root, path, numa, cpus, name, mib, nvlinks=()):
    return {
        "index": index,
        "uuid": "GPU-%08x-0000-4000-8000-%012x" % (0x5eed0000 + index, int(bus.replace(":", "").replace(".", ""), 16)),
        "name": name,
        "memory_bytes": mib * MIB,
        "numa_node": numa,
        "pci_bus_id": bus,
        "cpu_affinity": cpus,
        "pci_root": root,
        "pci_path": list(path),
        "nvlinks": [{"remote": r, "kind": k, "links": n} for (r, k, n) in nvlinks],
    }


def write(name, machine, source, gpus):
    doc = {"format": "vgpu-topology/1", "machine": machine, "source": source, "gpus": gpus}
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")


def dgx_h100():
    # DGX H100: 8 x H100 SXM5 80GB, each with 18 NVLink4 links spread 5/4/4/5 over four NVSwitch
    # chips (nvidia-smi: NV18 between every pair). Each GPU sits behind its own PCIe switch
    # (shared with a ConnectX-7) on its own Sapphire Rapids root complex; GPUs 0-3 on socket 0,
    # 4-7 on socket 1 (2 x 56 cores, SMT).
    buses = ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
             "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]
    switches = ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
    gpus = []
    for i, bus in enumerate(buses):
        b = int(bus[5:7], 16)
        root_bus = b - 3
        root = "pci0000:%02x" % root_bus
        path = ["0000:%02x:01.0" % root_bus, "0000:%02x:00.0" % (root_bus + 1),
                "0000:%02x:00.0" % (root_bus + 2)]
        numa = 0 if i < 4 else 1
        cpus = "0-55,112-167" if numa == 0 else "56-111,168-223"
        links = [(s, "switch", n) for s, n in zip(switches, (5, 4, 4, 5))]
        gpus.append(gpu(i, bus, root, path, numa, cpus, "NVIDIA H100 80GB HBM3", 81559, links))
    write("dgx-h100-8gpu-nvswitch.json", "dgx-h100-like",
          "hand-written: DGX H100 shape (NVSwitch all-to-all, one PCIe switch per GPU, 2 sockets)",
          gpus)


def pcie_8gpu_nvlink_pairs():
    # 8 x H100 NVL (PCIe) in a 2-socket server, NVLink bridges (3 per pair, NV12) joining cards
    # 0-1, 2-3 and 4-5; cards 6-7 have no bridge (as in a partly bridged or repaired machine), so
    # their best link is the shared switch, PIX. Socket 0: one root port feeding a cascade of PCIe switches (a top switch
    # with two leaf switches of two GPUs each): PIX inside a leaf, PXB across leaves.
    # Socket 1: two switches on two root complexes of the same NUMA node: PIX inside, NODE across.
    name, mib = "NVIDIA H100 NVL", 95830
    c0, c1 = "0-31,64-95", "32-63,96-127"
    top = ["0000:10:01.0", "0000:11:00.0", "0000:12:00.0"]  # root port, top USP, top DSP->leaf A
    top_b = ["0000:10:01.0", "0000:11:00.0", "0000:12:04.0"]  # top DSP -> leaf B
    leaf_a = top + ["0000:13:00.0"]
    leaf_b = top_b + ["0000:17:00.0"]
    gpus = [
        gpu(0, "0000:15:00.0", "pci0000:10", leaf_a + ["0000:14:00.0"], 0, c0, name, mib),
        gpu(1, "0000:16:00.0", "pci0000:10", leaf_a + ["0000:14:04.0"], 0, c0, name, mib),
        gpu(2, "0000:19:00.0", "pci0000:10", leaf_b + ["0000:18:00.0"], 0, c0, name, mib),
        gpu(3, "0000:1a:00.0", "pci0000:10", leaf_b + ["0000:18:04.0"], 0, c0, name, mib),
        gpu(4, "0000:83:00.0", "pci0000:80", ["0000:80:01.0", "0000:81:00.0", "0000:82:00.0"], 1, c1, name, mib),
        gpu(5, "0000:84:00.0", "pci0000:80", ["0000:80:01.0", "0000:81:00.0", "0000:82:04.0"], 1, c1, name, mib),
        gpu(6, "0000:c3:00.0", "pci0000:c0", ["0000:c0:01.0", "0000:c1:00.0", "0000:c2:00.0"], 1, c1, name, mib),
        gpu(7, "0000:c4:00.0", "pci0000:c0", ["0000:c0:01.0", "0000:c1:00.0", "0000:c2:04.0"], 1, c1, name, mib),
    ]
    for a, b in ((0, 1), (2, 3), (4, 5)):
        gpus[a]["nvlinks"] = [{"remote": gpus[b]["pci_bus_id"], "kind": "gpu", "links": 12}]
        gpus[b]["nvlinks"] = [{"remote": gpus[a]["pci_bus_id"], "kind": "gpu", "links": 12}]
    write("pcie-8gpu-2socket-nvlink-pairs.json", "pcie-8gpu-nvlink-pairs",
          "hand-written: 2-socket PCIe server, switch cascade on socket 0, NVLink bridges on 3 pairs",
          gpus)


def pcie_4gpu_2socket():
    # 4 x L40S, no NVLink, EPYC-like 2 sockets: socket 0 has GPUs 0 and 1 on two root ports of one
    # host bridge (PHB); socket 1 has GPUs 2 and 3 on two host bridges of one NUMA node (NODE).
    name, mib = "NVIDIA L40S", 46068
    c0, c1 = "0-63,128-191", "64-127,192-255"
    gpus = [
        gpu(0, "0000:01:00.0", "pci0000:00", ["0000:00:01.1"], 0, c0, name, mib),
        gpu(1, "0000:02:00.0", "pci0000:00", ["0000:00:01.2"], 0, c0, name, mib),
        gpu(2, "0000:81:00.0", "pci0000:80", ["0000:80:01.1"], 1, c1, name, mib),
        gpu(3, "0000:c1:00.0", "pci0000:c0", ["0000:c0:01.1"], 1, c1, name, mib),
    ]
    write("pcie-4gpu-2socket.json", "pcie-4gpu-2socket",
          "hand-written: 2-socket PCIe server without NVLink (PHB pair, NODE pair, SYS across)",
          gpus)


def single():
    gpus = [gpu(0, "0000:01:00.0", "pci0000:00", ["0000:00:01.0"], 0, "0-15", "NVIDIA L4", 23034)]
    write("single-gpu.json", "single-gpu", "hand-written: one PCIe GPU", gpus)


if __name__ == "__main__":
    dgx_h100()
    pcie_8gpu_nvlink_pairs()
    pcie_4gpu_2socket()
    single()

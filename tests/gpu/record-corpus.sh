#!/bin/bash
# Records the real-traffic corpus on a GPU machine and prints the machine's
# identity. usage: tests/gpu/record-corpus.sh OUTDIR [--prebuilt] [NAME...]
# (writes OUTDIR/traces/NAME.jsonl.gz; no NAME: every recording below). Each recording follows
# the program's children (fork, exec, torch.multiprocessing's spawn, torchrun's ranks): the
# recorder library travels in LD_PRELOAD and every process appends to the one file.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:?usage: record-corpus.sh OUTDIR [--prebuilt] [NAME...]}
shift
prebuilt=0
[[ "${1:-}" == --prebuilt ]] && { prebuilt=1; shift; }
only=("$@")
mkdir -p "$outdir/traces"
cd "$root"
{
  echo "== date"; date -u
  echo "== uname"; uname -a
  echo "== driver"; cat /proc/driver/nvidia/version 2>&1
  echo "== nvidia-smi"; nvidia-smi 2>&1
  echo "== glibc"; ldd --version 2>&1 | head -1
  echo "== nvcc"; nvcc --version 2>&1 | tail -2
  echo "== torch"; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1
  echo "== dev"; ls -l /dev/nvidia* 2>&1
  echo "== runtime"; (dmesg 2>/dev/null | head -3; cat /proc/version) 2>&1
} > "$outdir/env.txt" 2>&1
cat "$outdir/env.txt"

[[ $prebuilt == 1 ]] || tests/gpu/build.sh --no-shim || exit 1
b=$root/build/gpu
p=tests/gpu/progs
rec() {  # NAME CMD...: records unless NAMEs were given and this is not one of them
  local name=$1; shift
  if [[ ${#only[@]} -gt 0 && " ${only[*]} " != *" $name "* ]]; then
    return 0
  fi
  echo "== record $name: $*"
  timeout 300 "$b/vgpu-trace-record" -o "$outdir/traces/$name.jsonl" -- "$@" 2>&1 | tail -15
  echo "rc=${PIPESTATUS[0]} lines=$(wc -l < "$outdir/traces/$name.jsonl")" \
    "pids=$(grep -o '"pid":[0-9]*' "$outdir/traces/$name.jsonl" | sort -u | wc -l)"
  gzip -9f "$outdir/traces/$name.jsonl"
}
rec cuda-driver-api "$b/drv_corpus"
rec pytorch-train-step python3 $p/torch_train.py 3
rec nvidia-smi nvidia-smi
rec nvidia-smi-query nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv
rec nvml-query python3 $p/nvml_query.py
# Multi-process memory sharing (issue 16 item 4): legacy IPC handles and POSIX-fd handles
# between two processes, and torch.multiprocessing with both of PyTorch's sharing paths.
rec cuda-ipc-legacy "$b/ipc_pair" legacy
rec cuda-ipc-fd "$b/ipc_pair" fd
rec torch-mp-ipc python3 $p/torch_mp_share.py
rec torch-mp-expandable env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
  python3 $p/torch_mp_share.py
# What tenants run besides: Triton, JAX (without XLA's 75 % preallocation), CuPy, cuDNN + cuBLAS,
# CUDA graphs, and the NVML/nvidia-smi queries of monitoring agents.
rec triton-add python3 $p/triton_add.py
rec jax-matmul env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 $p/jax_matmul.py
rec cupy-ops python3 $p/cupy_ops.py
rec torch-cudnn-conv python3 $p/torch_conv.py
rec torch-cuda-graph python3 $p/torch_graph.py
rec nvidia-smi-q nvidia-smi -q
rec nvidia-smi-apps nvidia-smi --query-compute-apps=pid,used_memory --format=csv
# Two NCCL ranks on one GPU (issue 20 on one H200): NCCL usually refuses a duplicate GPU.
rec nccl-one-gpu torchrun --standalone --nproc_per_node=2 $p/nccl_one_gpu.py
ls -l "$outdir/traces"

"""The table of scripts/gpu-peers.sh: one row per run of rows.jsonl, in Markdown.

    python3 table.py ROWS.jsonl [HEADER.txt]
"""

import json
import sys

NAMES = {
    "tidemark-eager": "tidemark eager",
    "tidemark-fused": "tidemark fused",
    "torch-eager": "PyTorch eager",
    "torch-compile": "PyTorch torch.compile",
    "torch-bf16": "PyTorch autocast bf16",
    "jax-jit": "JAX jit",
}


def mib(value):
    return "-" if value is None else f"{value / 2**20:.1f}"


def ms(value):
    return "-" if value is None else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def rate(value):
    return "-" if value is None else f"{value:.2f}"


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    if len(sys.argv) > 2:
        for line in open(sys.argv[2]):
            print(f"<!-- {line.strip()} -->")
    # Device memory where a row ran on a device with pools (CUDA, wgpu); host RSS otherwise.
    gpu = any(r.get("device") in ("cuda", "wgpu") for r in rows)
    memory = "peak in use / reserved, MiB" if gpu else "peak (host RSS), MiB"
    after = " | pools after release, MiB | NVML after release, MiB" if gpu else ""
    print(f"| workload | who | precision | ms/step (median) | first step, ms | syncs / reads per step | {memory}{after} |")
    print("|---|---|---|---|---|---|---|" + ("---|---|" if gpu else ""))
    for r in rows:
        who = NAMES.get(r["impl"], r["impl"])
        precision = r.get("precision") or ("bf16" if r["impl"] == "torch-bf16" else "f32")
        if "skipped" in r:
            print(f"| {r['workload']} | {who} | {precision} | not run: {r['skipped']} |")
            continue
        if "error" in r:
            print(f"| {r['workload']} | {who} | {precision} | failed: {r['error']} |")
            continue
        waits = "-"
        if "syncs_per_step" in r:
            waits = f"{rate(r['syncs_per_step'])} / {rate(r['memory_reads_per_step'])}"
        if gpu:
            held = f"{mib(r.get('peak_in_use'))} / {mib(r.get('peak_reserved'))}"
            tail = f" | {mib(r.get('reserved_after_release'))} | {mib(r.get('nvml_after_release'))}"
        else:
            peak = r.get("peak_in_use") if r["impl"].startswith("tidemark") else None
            held = f"{mib(peak)} ({mib(r.get('peak_rss'))})" if peak else mib(r.get("peak_rss"))
            tail = ""
        print(
            f"| {r['workload']} | {who} | {precision} | {ms(r.get('median_step_ms'))} "
            f"| {ms(r.get('first_step_ms'))} | {waits} | {held}{tail} |"
        )


if __name__ == "__main__":
    main()

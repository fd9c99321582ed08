#!/usr/bin/env python3
"""Runs every shell command shown in README.md, docs/, examples/cluster/README.md and
examples/custom_model/README.md.

    scripts/docs-commands.py            run them all, from the repository root
    scripts/docs-commands.py --list     list them, and the ones not run with why
    scripts/docs-commands.py FILTER     only the blocks of files whose path contains FILTER
    --no-vulkan / --vulkan-only         without, or only, the commands that need a Vulkan device
                                        (all run before a change to the docs lands)

Two kinds of block are commands:
- a ```sh block runs as one bash script (set -eo pipefail: it stops at the first failure) and
  must exit 0;
- in any other block, a line that starts with "$ " is a command, and the lines after it, up to
  the next "$ " or the block's end, are what the docs show it printing. It must exit 0, unless
  the last line shown (an indented line after an error is its detail) starts with "error:",
  then it must fail. Every shown line that starts
  with "error:" or is "exit N" must appear in what it really prints. Byte figures and shares
  in an error line ("78.1 MiB", "(58%)") are what one machine measured, and differ on another
  CPU or with another number of rayon workers (docs/architecture.md): such a line is compared
  with its figures masked, and up to its first ";" (the error itself, before the breakdown by
  category and the advice, whose order follows the figures).

Commands run in the repository root, as a reader of a fresh checkout would run them, so `runs/`
must not exist yet (their run directories are named as the docs name them). A few commands are
not run, each for a reason printed with it (NOT_RUN below). The rest, about 11 minutes on two
cores and the Vulkan block's run on lavapipe, run before a change to the docs or to what they
show lands (README.md, "Development"); CI (.ci/run) runs none of them but the advisor's check.
`cargo bench` commands run with TIDEMARK_BENCH_QUICK=1 (the harness's smoke run).
"""

import glob
import os
import re
import subprocess
import sys
import time

# A command (one logical line, continuations joined) matching one of these is not run.
NOT_RUN = [
    (r"^cargo test$", "the test command: CI's own step runs it"),
    (r"^cargo bench\s*(#|$)", "the full benchmark takes about 13 minutes; "
     "CI smoke-runs the same harness (`TIDEMARK_BENCH_QUICK=1 cargo test --bench policies`)"),
    (r"^cargo bench -- --quick", "CI's own step runs its W0 table on the test build"),
    (r"^cargo bench --features wgpu", "a release build of the wgpu stack for one table; "
     "CI runs the wgpu memory tests instead"),
    (r"^perf ", "needs Linux perf and access to the kernel's performance events"),
    (r"^scripts/prune-figures\.py", "six to fifteen searches of 81 trials (about 5 minutes each "
     "seed set); tests in tests/cli/prune.rs check ASHA's and the median rule's decisions"),
    (r"offload-figures\.py", "four runs of a 9-million-parameter model on a Vulkan device (about "
     "6 minutes on lavapipe); tests gradient_offload_keeps_the_losses_and_one_gradient_set_on_"
     "the_device and optimizer_offload_keeps_the_losses_and_a_limit_between_the_peaks_needs_it "
     "check the same on smaller ones in CI"),
    (r"^scripts/pbt-figures\.py", "five seeds of five searches each (about 3 minutes); tests in "
     "tests/cli/pbt.rs check the population's decisions, copies and schedule"),
    (r"^scripts/tpe-figures\.py", "ten searches of 40 trials (about 2 minutes); tests in "
     "tests/cli/tpe.rs check TPE's draws"),
    (r"^cargo run --features wgpu,fused -- train", "a fused build on lavapipe, its dependencies "
     "unoptimized as CI builds them, spends about 5 minutes compiling and autotuning its kernels "
     "(278 s for 2 epochs, 196 s for 1 of 512 samples); the test eager_and_fused_execution_agree "
     "trains the same build with device.execution = \"fused\" and checks summary.json says so "
     "(README.md, \"Development\", says how to run it)"),
    (r"^cargo build --features wgpu,fused", "a second build of the wgpu stack with Burn's fusion "
     "(about 7 minutes on two cores), for the fused commands below it, which are not run"),
    (r"^scripts/kernel-count\.sh .*execution=fused", "three runs of a fused W1 on lavapipe, about "
     "28 minutes (the first tunes W1's shapes)"),
    (r"^scripts/kernel-cache-check\.sh .*execution=fused", "three runs of a fused build on "
     "lavapipe, its dependencies unoptimized, about 10 minutes (the first run autotunes); the "
     "test a_second_fused_run_takes_autotune_s_results_from_the_kernel_cache checks that the "
     "second run tunes nothing (README.md, \"Development\", says how to run it)"),
    (r"^scripts/gpu-peers\.sh", "needs PyTorch and JAX (a 5.9 GB venv, 165 s to install) or a "
     "CUDA device; CI's own step runs the script's tidemark half on flex"),
    (r"^\.venv-peers/", "needs .venv-peers, the peers' PyTorch and TensorFlow (several GB), "
     "which scripts/peers.sh installs; not part of CI"),
    (r"^scripts/optuna-check\.sh", "CI's own step runs it (it installs Optuna in a venv)"),
    (r"^scripts/tensorboard-check\.sh", "CI's own step runs it (it installs TensorBoard in a venv)"),
    (r"^scripts/tensorboard-reads\.py", "needs TensorBoard's Python package; "
     "scripts/tensorboard-check.sh installs it and runs this"),
    (r"^tensorboard ", "starts TensorBoard's server, which runs until stopped"),
    (r"^XDG_RUNTIME_DIR=/tmp tidemark train .*device\.backend=\"wgpu\"", "needs a tidemark built "
     "with --features wgpu (a 25-minute release build here); CI's wgpu step tests the memory "
     "layer on lavapipe"),
    (r"^scripts/study-figures\.py", "searches of 40 and 81 trials, one process against four "
     "workers, over several seeds (about 10 minutes); tests in tests/cli/study.rs check the "
     "workers' draws, rungs and takeovers"),
    (r"^scripts/study-growth\.sh", "two binaries (one built before a change), three rounds of a "
     "1,000-trial study each (about 4 minutes); tests in tests/cli/study.rs check the studies' "
     "decisions"),
    (r"sweep\.trials=10000", "a search of 10,000 trials takes 4 to 8 minutes and 6 GB of disk; "
     "tests five_hundred_trials_in_one_process_keep_nothing_and_stay_flat and "
     "five_hundred_trials_of_a_study_s_worker_keep_nothing_and_stay_flat check the same slope"),
]
# Blocks that need a Vulkan device (lavapipe in CI) run only where one is installed, or fail
# the check where TIDEMARK_REQUIRE_WGPU=1 says one must be.
NEEDS_VULKAN = re.compile(r"--features \S*wgpu")
FILES = [
    "README.md",
    *sorted(glob.glob("docs/*.md")),
    "examples/cluster/README.md",
    "examples/custom_model/README.md",
]


def blocks(path):
    """(line, kind, lines) of every fenced block of `path`."""
    out, lang, body, start = [], None, [], 0
    for number, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        fence = re.match(r"^```(\S*)", line)
        if fence and lang is None:
            lang, body, start = fence.group(1) or "text", [], number
        elif line.startswith("```") and lang is not None:
            out.append((start, lang, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


def logical_lines(lines):
    """Joins backslash continuations, and keeps a for/while loop as one unit."""
    units, current, depth = [], "", 0
    for line in lines:
        words = re.findall(r"\w+", line.split(" #")[0])
        depth += words.count("do") - words.count("done")
        current += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if line.endswith("\\"):
            continue
        if depth > 0:
            current += "\n"
            continue
        if current.strip():
            units.append(current.strip())
        current = ""
    return units


def not_run(unit):
    for pattern, why in NOT_RUN:
        if re.search(pattern, unit):
            return why
    return None


def commands(path):
    """(line, script, shown, units) for the commands of `path`: `shown` is None for a block."""
    found = []
    for start, lang, body in blocks(path):
        if lang in ("sh", "bash"):
            units = logical_lines(body)
            script = []
            for unit in units:
                why = not_run(unit)
                script.append(f"echo {quote('not run: ' + unit + ' (' + why + ')')}" if why else unit)
            found.append((start, "\n".join(script), None, units))
        else:
            for i, line in enumerate(body):
                if line.startswith("$ "):
                    shown = []
                    for after in body[i + 1:]:
                        if after.startswith("$ "):
                            break
                        shown.append(after)
                    found.append((start + 1 + i, line[2:], shown, [line[2:]]))
    return found


def quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def vulkan_present():
    return bool(glob.glob("/usr/share/vulkan/icd.d/*.json"))


def needs_vulkan(units):
    """Whether a block's commands that run need a Vulkan device."""
    return any(NEEDS_VULKAN.search(u) for u in units if not not_run(u))


def list_units(path, line, units):
    for unit in units:
        why = not_run(unit)
        print(f"{path}:{line}: {'not run (' + why + ')' if why else 'run'}: "
              f"{unit.splitlines()[0]}")


def check(path, line, script, shown, vulkan_block):
    """Runs one command; returns a failure message, or None."""
    where = f"{path}:{line}"
    if vulkan_block and not vulkan_present():
        if os.environ.get("TIDEMARK_REQUIRE_WGPU") == "1":
            return f"{where}: needs a Vulkan device and none is installed"
        print(f"-- {where}: skipped here: needs a Vulkan device (none installed)")
        return None
    more = " ..." if "\n" in script else ""
    print(f"-- {where}: {script.splitlines()[0]}{more}", flush=True)
    started = time.time()
    # A block is a script that stops at its first failure; a "$ " line is one shell line.
    flags = "-o pipefail" if shown is not None else "-eo pipefail"
    # The benchmark's filtered runs (`cargo bench -- w2`) run quick here: a full one times five
    # processes per case (about 5 minutes for w2 and the pipeline table), and its figures are
    # docs/benchmarks.md's, measured by hand; quick runs the same harness and cases.
    env = {**os.environ, "TIDEMARK_BENCH_QUICK": "1"}
    result = subprocess.run(["bash", *flags.split(), "-c", script], capture_output=True,
                            text=True, timeout=900, env=env)
    output = result.stdout + result.stderr
    print(f"   exit {result.returncode} in {time.time() - started:.1f}s", flush=True)
    # An error's detail goes on indented lines after it: the last line that is not one of them.
    printed = [s for s in shown or [] if s.strip() and not s.startswith("  ")]
    expect_failure = bool(printed) and printed[-1].startswith("error:")
    if expect_failure != (result.returncode != 0):
        tail = "\n".join(output.strip().splitlines()[-15:])
        want = "to fail" if expect_failure else "to succeed"
        return f"{where}: expected {want}, got exit {result.returncode}:\n{tail}"
    lines = output.splitlines()
    for expected in shown or []:
        if re.match(r"^exit \d+$", expected) and expected not in lines:
            return f"{where}: the docs show `{expected}`, which it did not print:\n{output[-2000:]}"
        if expected.startswith("error:") and not any(same_error(expected, l) for l in lines):
            return f"{where}: the docs show `{expected}`, which it did not print:\n{output[-2000:]}"
    return None


# A measured size or share: "78.1 MiB", "512 B", "(58%)".
FIGURE = re.compile(r"\d+(\.\d+)? (B|KiB|MiB|GiB|TiB)\b|\d+(\.\d+)?%")


def same_error(shown, printed):
    """Whether `printed` is the error line `shown`, whatever sizes this machine measured."""
    if shown == printed:
        return True
    mask = lambda line: FIGURE.sub("#", line).split(";")[0]
    return mask(shown) == mask(printed)


def main():
    args = sys.argv[1:]
    listing = "--list" in args
    vulkan = "skip" if "--no-vulkan" in args else "only" if "--vulkan-only" in args else "all"
    filters = [a for a in args if not a.startswith("--")]
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if not listing and vulkan != "only" and os.path.exists("runs"):
        sys.exit("error: runs/ exists; move it away first (the docs' commands name their run "
                 "directories as a fresh checkout makes them)")
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    if not os.path.exists("target") and target != "target":
        # Some commands name ./target/release/tidemark, as a reader's checkout has it.
        os.symlink(os.path.abspath(target), "target")
    failures, ran, skipped, later = [], 0, 0, 0
    for path in FILES:
        if filters and not any(f in path for f in filters):
            continue
        for line, script, shown, units in commands(path):
            if listing:
                list_units(path, line, units)
                continue
            vulkan_block = needs_vulkan(units)
            if vulkan_block and vulkan == "skip":
                later += 1
            if (vulkan == "skip" and vulkan_block) or (vulkan == "only" and not vulkan_block):
                continue
            reasons = [(u, not_run(u)) for u in units if not_run(u)]
            skipped += len(reasons)
            if len(reasons) == len(units):
                for unit, why in reasons:
                    print(f"-- {path}:{line}: not run: {unit} ({why})")
                continue
            ran += 1
            failure = check(path, line, script, shown, vulkan_block)
            if failure:
                failures.append(failure)
    if listing:
        return
    print(f"docs commands: {ran} run, {skipped} not run (reasons above), "
          f"{len(failures)} failed" + (f"; {later} need Vulkan: --vulkan-only" if later else ""))
    for failure in failures:
        print(f"FAILED {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Population based training against random search, ASHA and the best constant rate, over
seeds, at the same budget of epochs (docs/search.md, "Population based training").

    scripts/pbt-figures.py [CONFIG] [--seeds 1,2,3,4,5]

CONFIG (default configs/search-pbt.toml) is a `method = "pbt"` search of P members of E epochs
that varies train.lr alone. For each seed (`sweep.seed` and `run.seed`), under /tmp/pbt-figures/:
- pbt: the search as configured (P x E epochs);
- random: the same P draws trained at their rates throughout (P x E epochs): PBT without its
  exploits;
- asha: as many draws as ASHA (rungs at 1, 3, 9, ... epochs, the best third promoted) trains
  in at most P x E epochs;
- constant: a grid of 10 rates, log-spaced over the varied range, trained throughout (10 x E
  epochs): the best constant rate, found with more epochs than the others had;
- cosine: the same 10 rates, each decayed to 0 by a cosine schedule (10 x E epochs): what a
  schedule written by hand gains on the workload.
It prints a markdown table of each method's best value among the trials that trained to the end,
and the rate of each epoch that PBT's best model trained with (back through the members it
copied: its schedule); then each method's mean and the epochs a search spent.
"""

import json
import math
import os
import re
import subprocess
import sys

EXE = os.environ.get("TIDEMARK", "target/release/tidemark")
OUT = "/tmp/pbt-figures"


def without_pbt_table(text):
    """The config's text without its [sweep.pbt] table, for the methods that refuse it."""
    return re.sub(r"(?ms)^\[sweep\.pbt\]\n.*?(?=^\[)", "", text)


def schedule(sweep_dir):
    """The rate of each epoch PBT's best model trained with: the table `sweep.md` gives (the
    best member's schedule, back through the members it copied), one rate an epoch."""
    text = open(os.path.join(sweep_dir, "sweep.md")).read()
    table = text.split("| epochs | train.lr |\n|---|---|\n")[1].split("\n\n")[0]
    rates = []
    for line in table.strip().splitlines():
        epochs, lr = (c.strip() for c in line.strip("|").split("|"))
        first, _, last = epochs.partition("-")
        rates += [float(lr)] * (int(last or first) - int(first) + 1)
    return rates


def asha_trials(budget, epochs):
    """The most trials ASHA (rungs at 1, 3, 9, ... below `epochs`, a third promoted at each)
    trains in `budget` epochs, counting a third of a rung's trials as going on."""
    rungs = [3 ** k for k in range(10) if 3 ** k < epochs]

    def cost(n):
        spent, left, at = 0.0, float(n), 0
        for rung in rungs:
            spent += left * (rung - at)
            left, at = left / 3, rung
        return spent + left * (epochs - at)

    n = 1
    while cost(n + 1) <= budget:
        n += 1
    return n


def sweep(config, name, seed, sets):
    out = f"{OUT}/{name}-{seed}"
    subprocess.run(["rm", "-rf", out], check=True)
    args = [EXE, "sweep", "--config", config, "--out", out,
            "--set", f"sweep.seed={seed}", "--set", f"run.seed={seed}"]
    for s in sets:
        args += ["--set", s]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (found,) = [d for d in os.listdir(out) if d.endswith("-sweep")]
    with open(os.path.join(out, found, "sweep.json")) as f:
        rows = json.load(f)["trials"]
    ended = [r for r in rows if r["status"] == "completed" and r["monitored"] is not None]
    best = min(ended, key=lambda r: r["monitored"])
    return best, sum(r.get("epochs") or 0 for r in rows), os.path.join(out, found)


def main():
    argv = sys.argv[1:]
    seeds = [1, 2, 3, 4, 5]
    if "--seeds" in argv:
        i = argv.index("--seeds")
        seeds = [int(s) for s in argv[i + 1].split(",")]
        del argv[i:i + 2]
    config = argv[0] if argv else "configs/search-pbt.toml"
    os.makedirs(OUT, exist_ok=True)
    text = open(config).read()
    plain = f"{OUT}/without-pbt.toml"
    with open(plain, "w") as f:
        f.write(without_pbt_table(text))
    population = int(re.search(r"(?m)^population = (\d+)", text).group(1))
    lo, hi = (float(x) for x in re.search(
        r"train\.lr = \{ min = ([0-9.e-]+), max = ([0-9.e-]+)", text).groups())
    rates = [f"{lo * (hi / lo) ** (i / 9):.3g}" for i in range(10)]
    epochs = int(re.search(r"(?m)^epochs = (\d+)", text).group(1))
    methods = [
        ("pbt", config, []),
        ("random", plain, ['sweep.method="random"', f"sweep.trials={population}"]),
        ("asha", plain, ['sweep.method="random"', f"sweep.trials={asha_trials(population * epochs, epochs)}",
                         'sweep.prune.method="asha"', "sweep.prune.min_epochs=1",
                         "sweep.prune.reduction=3"]),
        ("constant", plain, ['sweep.method="grid"', f"sweep.vary.train.lr=[{', '.join(rates)}]"]),
        ("cosine", plain, ['sweep.method="grid"', f"sweep.vary.train.lr=[{', '.join(rates)}]",
                           'train.schedule.kind="cosine"']),
    ]
    print("| seed | PBT | random | ASHA | best constant rate | best cosine schedule | the rate of "
          "each epoch that PBT's best model trained with |")
    print("|---|---|---|---|---|---|---|")
    totals = {m: [] for m, _, _ in methods}
    spent = {}
    for seed in seeds:
        cells = {}
        for name, path, sets in methods:
            best, epochs, found = sweep(path, name, seed, sets)
            if name == "pbt":
                pbt_dir = found
            totals[name].append(best["monitored"])
            spent.setdefault(name, []).append(epochs)
            cells[name] = best
        pbt = cells["pbt"]
        lrs = [f"{lr:.3g}" for lr in schedule(pbt_dir)]
        constant, cosine = cells["constant"], cells["cosine"]
        print(f"| {seed} | {pbt['monitored']:.4f} | {cells['random']['monitored']:.4f} "
              f"| {cells['asha']['monitored']:.4f} | {constant['monitored']:.4f} "
              f"(lr {constant['values']['train.lr']:.3g}) | {cosine['monitored']:.4f} "
              f"(lr {cosine['values']['train.lr']:.3g}) | {' → '.join(lrs)} |", flush=True)
    mean = {m: sum(v) / len(v) for m, v in totals.items()}
    sd = {m: math.sqrt(sum((x - mean[m]) ** 2 for x in v) / max(len(v) - 1, 1))
          for m, v in totals.items()}
    cells = " | ".join(f"{mean[m]:.4f} ± {sd[m]:.4f}" for m in totals)
    print(f"| mean ± sd | {cells} | |")
    mean_spent = (f"{sum(spent[m]) / len(spent[m]):.1f}" for m in totals)
    print(f"| epochs a search, mean | {' | '.join(mean_spent)} | |")


if __name__ == "__main__":
    main()

"""Kernel time per kernel name, from Nsight Compute (gpu__time_duration.sum, dram__bytes.sum):
launches, total time, share, DRAM bytes (one line each, largest first).

  ncu_by_kernel.py LAUNCHES COMMAND...   profile COMMAND's first LAUNCHES kernels (ncu --clock-control
                                         none: the clocks as they are) into /tmp/ncu_by_kernel.csv
  ncu_by_kernel.py FILE.csv              sum an earlier `ncu --csv` run of those metrics"""
import collections
import csv
import subprocess
import sys

METRICS = "gpu__time_duration.sum,dram__bytes.sum"
TIME = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1, "us": 1, "msecond": 1e3, "ms": 1e3}
BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}

if len(sys.argv) > 2:
    path = "/tmp/ncu_by_kernel.csv"
    with open(path, "w") as out:
        subprocess.run(["ncu", "--clock-control", "none", "--metrics", METRICS, "--launch-count", sys.argv[1], "--csv", *sys.argv[2:]], stdout=out, check=True)
else:
    path = sys.argv[1]
rows = list(csv.reader(l for l in open(path) if l.startswith('"')))
head, body = rows[0], rows[1:]
k, m, v, unit = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value"), head.index("Metric Unit")
t = collections.defaultdict(lambda: [0, 0.0, 0.0])
for r in body:
    val, name = float(r[v].replace(",", "")), r[k][:90]
    if r[m] == "gpu__time_duration.sum":
        t[name][0] += 1
        t[name][1] += val * TIME[r[unit]]
    elif r[m] == "dram__bytes.sum":
        t[name][2] += val * BYTES[r[unit]] / 1e9
total = sum(x[1] for x in t.values())
print(f"{len(body) // 2} launches, {total / 1e3:.2f} ms of kernel time")
for name, (n, us, gb) in sorted(t.items(), key=lambda x: -x[1][1]):
    print(f"{us / 1e3:8.3f} ms {100 * us / total:5.1f}% {n:4d}x {gb:7.2f} GB  {name}")

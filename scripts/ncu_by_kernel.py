"""Sums `ncu --csv --metrics gpu__time_duration.sum,dram__bytes.sum` rows per kernel name: launches, total
time, share, DRAM bytes (one line each, largest first). Usage: ncu_by_kernel.py ncu.csv"""
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, body = rows[0], rows[1:]
k, m, v = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
unit = head.index("Metric Unit")
t = collections.defaultdict(lambda: [0, 0.0, 0.0])
for r in body:
    val = float(r[v].replace(",", ""))
    name = r[k][:90]
    if r[m] == "gpu__time_duration.sum":
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1, "us": 1, "msecond": 1e3, "ms": 1e3}[r[unit]]
        t[name][0] += 1; t[name][1] += val * scale
    elif r[m] == "dram__bytes.sum":
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[r[unit]]
        t[name][2] += val * scale / 1e9
total = sum(x[1] for x in t.values())
print(f"{len(body)//2} launches, {total/1e3:.2f} ms of kernel time")
for name, (n, us, gb) in sorted(t.items(), key=lambda x: -x[1][1]):
    print(f"{us/1e3:8.3f} ms {100*us/total:5.1f}% {n:4d}x {gb:7.2f} GB  {name}")

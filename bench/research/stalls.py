"""Summarises an Nsight Compute source page (CSV, SASS view) of one kernel:
stall samples by reason, by opcode, and the instructions with the most samples.

usage: python3 bench/research/stalls.py SRC.csv [TOP]
(SRC.csv from `ncu -i REPORT --page source --csv --print-source sass`, as
bench/research/diag.sh writes it.)
"""
import csv, sys
from collections import Counter, defaultdict

rows = list(csv.reader(open(sys.argv[1])))
top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 25
hdr, data = rows[1], rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
num = lambda d, h: int(d[ix[h]] or 0)
samples = lambda d: num(d, "Warp Stall Sampling (All Samples)")

def opcode(src):
    w = src.split()
    return (w[1] if w[0].startswith("@") else w[0]).split(".")[0]

total = sum(samples(d) for d in data)
print(f"{rows[0][1]}: {total} samples over {len(data)} instructions")
by_reason = Counter()
for d in data:
    for r in reasons:
        by_reason[r[6:]] += num(d, r)
print("by reason:", ", ".join(f"{r} {100 * v / total:.1f}%" for r, v in by_reason.most_common(8)))
by_op = defaultdict(Counter)
for d in data:
    op = opcode(d[ix["Source"]].strip())
    by_op[op]["all"] += samples(d)
    for r in reasons:
        by_op[op][r[6:]] += num(d, r)
print("by opcode:")
for op, c in sorted(by_op.items(), key=lambda x: -x[1]["all"])[:12]:
    top = ", ".join(f"{r} {v}" for r, v in c.most_common(5) if r != "all")
    print(f"  {op:10s} {100 * c['all'] / total:5.1f}%  {top}")
print(f"top {top_n} instructions (index, samples, source, top reasons):")
for n, d in sorted(enumerate(data), key=lambda x: -samples(x[1]))[:top_n]:
    top = ", ".join(f"{r[6:]} {num(d, r)}" for r in sorted(reasons, key=lambda r: -num(d, r))[:3] if num(d, r))
    print(f"  {n:5d} {samples(d):6d}  {d[ix['Source']].strip()[:58]:58s} {top}")

"""Counts, in every readable mapping of a process, the occurrences of each needle.

usage: mem-scan.py PID NAME=VALUE...   prints "NAME=COUNT ..." sorted by name

For the tests' "no real value in the sandbox's memory" checks: the host reads /proc/PID/mem of
a sandbox process that is still running after its calls; a needle that must be there (the
surrogate) shows that the scan sees the process.
"""
import re
import sys

pid = int(sys.argv[1])
needles = {k: v.encode() for k, v in (a.split("=", 1) for a in sys.argv[2:])}
found = {k: 0 for k in needles}
with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
        if "r" not in m.group(3) or "[vvar]" in line or "[vsyscall]" in line:
            continue
        a, b = int(m.group(1), 16), int(m.group(2), 16)
        try:
            mem.seek(a)
            data = mem.read(b - a)
        except OSError:
            continue
        for k, v in needles.items():
            found[k] += data.count(v)
print(" ".join("%s=%d" % kv for kv in sorted(found.items())))

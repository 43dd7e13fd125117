# proxy-netns.py PID CMD...: runs CMD in the egress proxy's network namespace, the one of the
# sockets of airlock-net (PID) that is not this process's own: no process lives there, the
# proxy's sockets hold it. Takes a copy of each socket (pidfd_getfd: root) and asks the kernel for
# its namespace (SIOCGSKNS).
import ctypes
import fcntl
import os
import subprocess
import sys

SYS_pidfd_getfd, SIOCGSKNS, CLONE_NEWNET = 438, 0x894C, 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
own = os.stat("/proc/self/ns/net").st_ino
pidfd = os.pidfd_open(pid)
for name in os.listdir(f"/proc/{pid}/fd"):
    try:
        if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
            continue
    except OSError:
        continue
    fd = libc.syscall(SYS_pidfd_getfd, pidfd, int(name), 0)
    if fd < 0:
        continue
    try:
        ns = fcntl.ioctl(fd, SIOCGSKNS)
    except OSError:
        os.close(fd)
        continue
    os.close(fd)
    if os.fstat(ns).st_ino != own:
        if libc.setns(ns, CLONE_NEWNET) != 0:
            sys.exit("setns failed")
        sys.exit(subprocess.run(sys.argv[2:]).returncode)
    os.close(ns)
sys.exit("no socket of another network namespace")

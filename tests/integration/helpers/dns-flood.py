"""Floods the sandbox's DNS responder with queries for distinct denied names.

usage: dns-flood.py SERVER SECONDS

Prints "sent N" at the end. Answers are read and thrown away, so the socket never fills.
"""

import random
import socket
import struct
import sys
import time


def query(name):
    q = struct.pack(">HHHHHH", random.randrange(65536), 0x100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)


def main():
    server, seconds = sys.argv[1], float(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    end = time.time() + seconds
    sent = 0
    while time.time() < end:
        try:
            s.sendto(query("f%d.denied.test" % random.randrange(10**9)), (server, 53))
            sent += 1
        except BlockingIOError:
            pass
        try:
            while True:
                s.recv(600)
        except BlockingIOError:
            pass
    print("sent", sent)


if __name__ == "__main__":
    main()

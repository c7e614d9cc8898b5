#!/usr/bin/env python3
"""The floor of a vm box's channel: QEMU as ward starts it (microvm, one
virtio-serial device), a port named "raw" on a unix socket, and in the
guest bench/vmchan-init.c writing 100 MiB to it, reading 100 MiB from it,
then echoing single bytes. Prints "bulk MB/s" (guest to host), "in MB/s"
(host to guest, a download's way) and "rtt median-µs p90-µs" lines: what the
egress proxy's rows ride on, measured without ward on either side.

usage: vmchan.py KERNEL INITRD WORKDIR ACCEL MIB ROUNDS"""
import os
import socket
import statistics
import subprocess
import sys
import time


def tsc_khz():
    """The host's clock rate: without it the guest kernel cannot calibrate
    its TSC under TCG (no PIT or HPET on microvm), as ward's own VMs pass."""
    for line in open("/proc/cpuinfo"):
        if line.startswith("cpu MHz"):
            return " tsc_early_khz=%d" % int(float(line.split(":")[1]) * 1000)
    return ""


def vm(kernel, initrd, work, accel, arg):
    sock = os.path.join(work, "vmchan.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    q = subprocess.Popen(
        ["qemu-system-x86_64", "-M", "microvm,rtc=on", "-accel", accel, "-cpu", "host" if accel == "kvm" else "max",
         "-m", "512M", "-smp", "1", "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
         "-kernel", kernel, "-initrd", initrd,
         "-append", "console=ttyS0 quiet panic=-1 rdinit=/vmchan vmchan=" + arg + tsc_khz(),
         "-device", "virtio-serial-device",
         "-chardev", "socket,id=ch,path=%s,server=on,wait=off" % sock,
         "-device", "virtserialport,chardev=ch,name=raw"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.settimeout(300)
    return q, s


def main():
    kernel, initrd, work, accel, mib, rounds = sys.argv[1:7]
    mib, rounds = int(mib), int(rounds)
    q, s = vm(kernel, initrd, work, accel, "bulk:%d" % mib)
    want, got, t0 = mib << 20, 0, None
    while got < want:
        b = s.recv(1 << 20)
        if not b:
            break
        if t0 is None:
            t0 = time.monotonic()
        got += len(b)
    t1 = time.monotonic()
    s.close()
    q.wait(timeout=120)
    if got < want:
        sys.exit("vmchan: only %d of %d bytes came" % (got, want))
    print("bulk %.1f" % (got / 1e6 / (t1 - t0)))
    # Host -> guest, the way a download comes: written, until the guest
    # says it has it all.
    q, s = vm(kernel, initrd, work, accel, "in:%d" % mib)
    chunk = b"x" * (1 << 16)
    t0 = time.monotonic()
    for _ in range(mib * 16):
        s.sendall(chunk)
    if s.recv(1) != b"k":
        sys.exit("vmchan: the guest did not take it all")
    t1 = time.monotonic()
    s.close()
    q.wait(timeout=120)
    print("in %.1f" % ((mib << 20) / 1e6 / (t1 - t0)))
    q, s = vm(kernel, initrd, work, accel, "rtt:%d" % rounds)
    rt = []
    for _ in range(rounds):
        a = time.monotonic()
        s.sendall(b"x")
        if s.recv(1) != b"x":
            sys.exit("vmchan: the echo broke")
        rt.append((time.monotonic() - a) * 1e6)
    s.close()
    q.wait(timeout=120)
    rt.sort()
    print("rtt %.0f %.0f" % (statistics.median(rt), rt[int(len(rt) * 0.9)]))


if __name__ == "__main__":
    main()

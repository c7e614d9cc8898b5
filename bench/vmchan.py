#!/usr/bin/env python3
"""The floor of a vm box's channel: QEMU as ward starts it (microvm, one
virtio-serial device), a port named "raw" on a unix socket, and in the
guest bench/vmchan-init.c writing 100 MiB to it, reading 100 MiB from it,
then echoing single bytes. Prints "bulk MB/s" (guest to host), "in MB/s"
(host to guest, a download's way) and "rtt median-µs p90-µs" lines: what the
egress proxy's rows ride on, measured without ward on either side.

Given NETINITRD (the same init with a virtio-net device's modules under
/netmod), the same download and echo over TCP through a virtio-net device
instead: "net-user in MB/s" and "net-user rtt median-µs p90-µs" with QEMU's
user-mode network (slirp: no privilege, what a rootless box would have), and
"net-tap ..." through a tap device on the host, where it can make one (as
root): what a virtio-net path would give the proxy.

usage: vmchan.py KERNEL INITRD WORKDIR ACCEL MIB ROUNDS [NETINITRD]"""
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


def qemu(kernel, initrd, accel, arg, devices):
    return subprocess.Popen(
        ["qemu-system-x86_64", "-M", "microvm,rtc=on", "-accel", accel, "-cpu", "host" if accel == "kvm" else "max",
         "-m", "512M", "-smp", "1", "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
         "-kernel", kernel, "-initrd", initrd,
         "-append", "console=ttyS0 quiet panic=-1 rdinit=/vmchan vmchan=" + arg + tsc_khz()] + devices,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def vm(kernel, initrd, work, accel, arg):
    sock = os.path.join(work, "vmchan.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    q = qemu(kernel, initrd, accel, arg,
             ["-device", "virtio-serial-device",
              "-chardev", "socket,id=ch,path=%s,server=on,wait=off" % sock,
              "-device", "virtserialport,chardev=ch,name=raw"])
    for _ in range(600):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.settimeout(300)
    return q, s


def vm_net(kernel, initrd, accel, arg, netdev, addr):
    """A VMM with one virtio-net device whose guest connects to addr (the
    host's side of netdev as 10.0.2.2 sees it): the accepted connection."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, 0))
    ls.listen(1)
    ls.settimeout(300)
    q = qemu(kernel, initrd, accel, "%s:%d" % (arg, ls.getsockname()[1]),
             ["-netdev", netdev, "-device", "virtio-net-device,netdev=n0"])
    try:
        s, _ = ls.accept()
    except socket.timeout:
        q.kill()
        q.wait()
        raise
    finally:
        ls.close()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(300)
    return q, s


def download(q, s, mib):
    """mib MiB written to the guest until it says it has them: MB/s."""
    chunk = b"x" * (1 << 16)
    t0 = time.monotonic()
    for _ in range(mib * 16):
        s.sendall(chunk)
    if s.recv(1) != b"k":
        sys.exit("vmchan: the guest did not take it all")
    t1 = time.monotonic()
    s.close()
    q.wait(timeout=120)
    return (mib << 20) / 1e6 / (t1 - t0)


def echo(q, s, rounds):
    """rounds single bytes echoed by the guest: (median, p90) µs."""
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
    return statistics.median(rt), rt[int(len(rt) * 0.9)]


def tap_up(name):
    """A tap device on the host as 10.0.2.2/24, or False where none can be
    made (not root, no ip)."""
    try:
        subprocess.run(["ip", "tuntap", "add", name, "mode", "tap"], check=True, capture_output=True)
        subprocess.run(["ip", "addr", "add", "10.0.2.2/24", "dev", name], check=True, capture_output=True)
        subprocess.run(["ip", "link", "set", name, "up"], check=True, capture_output=True)
        return True
    except (OSError, subprocess.CalledProcessError):
        subprocess.run(["ip", "link", "del", name], capture_output=True)
        return False


def net(kernel, initrd, accel, mib, rounds):
    tap = "wvmchan%d" % (os.getpid() % 100000)
    paths = [("net-user", "user,id=n0", "127.0.0.1")]
    if tap_up(tap):
        paths.append(("net-tap", "tap,id=n0,ifname=%s,script=no,downscript=no" % tap, "10.0.2.2"))
    try:
        for name, netdev, addr in paths:
            print("%s-in %.1f" % (name, download(*vm_net(kernel, initrd, accel, "netin:%d" % mib, netdev, addr), mib)))
            print("%s-rtt %.0f %.0f" % ((name,) + echo(*vm_net(kernel, initrd, accel, "netrtt:%d" % rounds, netdev, addr), rounds)))
    finally:
        if len(paths) > 1:
            subprocess.run(["ip", "link", "del", tap], capture_output=True)


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
    print("in %.1f" % download(*vm(kernel, initrd, work, accel, "in:%d" % mib), mib))
    print("rtt %.0f %.0f" % echo(*vm(kernel, initrd, work, accel, "rtt:%d" % rounds), rounds))
    if len(sys.argv) > 7:
        net(kernel, sys.argv[7], accel, mib, rounds)


if __name__ == "__main__":
    main()

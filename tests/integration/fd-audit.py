#!/usr/bin/env python3
"""Every descriptor of every process in a box points inside it.

usage: fd-audit.py GUEST_PID   (run on the host, as the box's owner or root)

The processes are the guest (PID 1 of the box) and all its descendants:
its threads share its table; calls, their inits and their children have
their own. Each descriptor is one of:
  - the guest's channel: exactly one socket, held by the guest;
  - a kernel object with no path (pipe, eventfd, signalfd, epoll, io_uring,
    memfd): nothing to walk from;
  - a file of the box: the mount it lies on is one of the process's own
    mounts (/proc/PID/mountinfo), and the same path inside the process's
    root is the same inode.
Anything else is a way out (a host directory, a host log file) and is
printed as BAD. The last line says how many descriptors were checked.
"""
import os
import sys


def children(pid):
    out = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def tree(root):
    seen, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        try:
            todo += children(p)
        except OSError:
            pass
    return seen


def mount_ids(pid):
    ids = set()
    with open("/proc/%d/mountinfo" % pid) as f:
        for line in f:
            ids.add(int(line.split()[0]))
    return ids


def fd_mnt(pid, fd):
    with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
        for line in f:
            if line.startswith("mnt_id:"):
                return int(line.split()[1])
    return None


KERNEL_OBJECTS = ("pipe:", "anon_inode:", "/memfd:")


def main():
    guest = int(sys.argv[1])
    bad = checked = sockets = 0
    for pid in tree(guest):
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
            mounts = mount_ids(pid)
        except OSError:
            continue  # it ended meanwhile
        for fd in fds:
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
                mnt = fd_mnt(pid, fd)
            except OSError:
                continue
            checked += 1
            if link.startswith("socket:"):
                sockets += 1
                if pid != guest:
                    print("BAD %d fd %s: %s: a socket outside the guest" % (pid, fd, link))
                    bad += 1
                continue
            if link.startswith(KERNEL_OBJECTS):
                continue
            why = None
            if mnt not in mounts:
                why = "on a mount (%s) that is not one of the box's" % mnt
            else:
                try:
                    a = os.stat("/proc/%d/fd/%s" % (pid, fd))
                    b = os.stat("/proc/%d/root%s" % (pid, link))
                    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                        why = "not the file of that path inside the box"
                except OSError as e:
                    why = "no such path inside the box (%s)" % e.strerror
            if why:
                print("BAD %d fd %s -> %s: %s" % (pid, fd, link, why))
                bad += 1
    if sockets != 1:
        print("BAD: %d sockets in the box; the guest's channel is the only one expected" % sockets)
        bad += 1
    print("checked %d descriptors in %d processes, %d bad" % (checked, len(tree(guest)), bad))
    sys.exit(1 if bad else 0)


main()

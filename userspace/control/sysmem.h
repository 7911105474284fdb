// sysmem.h - what a topology or an engine takes from the machine, read from /proc: kernel
// memory that is not a cache, a process's resident memory and its open descriptors. `topo up`
// prints them after a bring-up; `quench bench fabric` reports them per shape.
//
// Units: MiB (2^20 bytes), counts.
#pragma once

#include <cstddef>
#include <string>

namespace qn {

// Kernel memory that is not a cache (/proc/meminfo: unreclaimable slab, per-CPU, kernel stacks,
// page tables, vmalloc), MiB: what namespaces, veths, qdiscs, BPF maps and sockets take.
// MemAvailable would mix in the page cache and memory a kernel worker frees after a teardown.
double kernel_mib();

// kernel_mib once it holds still (two reads 500 ms apart within 8 MiB, at most 30 s): what an
// earlier teardown frees (sockets, maps, namespaces) is freed by kernel workers after `topo
// down` returned, gigabytes after a large fabric.
double settled_kernel_mib();

// A process's resident memory (VmRSS of /proc/PID/status; "self" for this one), MiB; 0 when it
// is gone.
double rss_mib(const std::string &pid);

// A process's open file descriptors (/proc/PID/fd); 0 when it is gone.
size_t count_fds(const std::string &pid);

} // namespace qn

// xsk.cc - AF_XDP socket wrapper (xsk.h).
#include "transport/xsk.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/if_xdp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/abi.h"

namespace qn::tp {

struct XskPort::Rings {
	// Zero-initialised: libxdp 1.3.1 leaves the completion ring's cached indices unset
	// (notes/datapath.md).
	xsk_ring_prod fill{};
	xsk_ring_cons comp{};
	xsk_ring_cons rx{};
	xsk_ring_prod tx{};
};

XskPort::~XskPort() { close(); }

void XskPort::close()
{
	if (xsk_)
		xsk_socket__delete(xsk_);
	if (umem_)
		xsk_umem__delete(umem_);
	if (area_)
		munmap(area_, area_bytes_);
	delete r_;
	xsk_ = nullptr;
	umem_ = nullptr;
	area_ = nullptr;
	r_ = nullptr;
	tx_pool_.clear();
	fill_pending_.clear();
	tx_outstanding_ = 0;
	tx_peak_ = 0;
}

int XskPort::fd() const { return xsk_ ? xsk_socket__fd(xsk_) : -1; }

Status XskPort::open(const std::string &ifname, int xskmap_fd, uint32_t frames, uint32_t ring)
{
	close();
	ifname_ = ifname;
	r_ = new Rings();
	area_bytes_ = size_t(frames) * kChunkBytes;
	void *a = mmap(nullptr, area_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	if (a == MAP_FAILED)
		return sys_error(errno, "mmap UMEM for " + ifname);
	area_ = static_cast<uint8_t *>(a);
	// Not inherited by children: the kernel copies pinned pages of a private mapping at fork, so
	// with sockets open (an engine's, or a run's PortPool across calibration steps) every fork of
	// `ip` or `tc` copied the whole UMEM (10 GiB on k=8: each fork took seconds). As RDMA
	// libraries do for registered memory (ibv_fork_init).
	if (madvise(area_, area_bytes_, MADV_DONTFORK) != 0)
		return sys_error(errno, "madvise(MADV_DONTFORK) of the UMEM for " + ifname);
	ring_size_ = ring;
	xsk_socket_config sc{};
	sc.rx_size = ring;
	sc.tx_size = ring;
	sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
	sc.xdp_flags = 0;
	sc.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP;
	{
		// The UMEM's fd becomes the first socket: both are made in this thread's namespace.
		xsk_umem_config uc{};
		uc.fill_size = ring;
		// A TX frame's completion is reserved when the kernel takes it and posted when its skb
		// is freed (after the switch forwarded it): the completion ring must hold every TX
		// frame, or the kernel stops taking frames while the switch holds many.
		uc.comp_size = std::max(ring, frames / 2);
		uc.frame_size = kChunkBytes;
		uc.frame_headroom = 0;
		uc.flags = 0;
		if (int err = xsk_umem__create(&umem_, area_, area_bytes_, &r_->fill, &r_->comp, &uc); err) {
			umem_ = nullptr;
			return sys_error(err, "create UMEM for " + ifname);
		}
		// Re-binding a queue right after a close returns EBUSY for ~10 ms: retry.
		int err = 0;
		// (Longer after a run that left a deep switch queue: the old socket lives until the
		// switch has released every frame it charged.)
		for (int i = 0; i < 600; i++) {
			err = xsk_socket__create(&xsk_, ifname.c_str(), 0, umem_, &r_->rx, &r_->tx, &sc);
			if (err != -EBUSY)
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
		}
		if (err) {
			xsk_ = nullptr;
			return sys_error(err, "create AF_XDP socket on " + ifname);
		}
	}
	// Closed at exec: a process this one starts (switchd, at every change of D) must not keep
	// the socket, and with it the queue (the next bind fails with EBUSY) and the pinned UMEM,
	// after this process lets go of it (a run's PortPool holds sockets across those starts).
	for (int fd : {xsk_socket__fd(xsk_), xsk_umem__fd(umem_)})
		if (fd >= 0 && fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) != 0)
			return sys_error(errno, "set close-on-exec on the AF_XDP socket of " + ifname);
	// Copy-mode TX builds an skb charged to this socket's send buffer until the switch's queue
	// releases it: with the default buffer (~200 KB) a sender stops at ~100 KB queued
	// downstream and its frames wait in the TX ring, a hidden queue (docs/transport.md). The
	// buffer is made larger than any switch buffer so the switch's admission decides.
	{
		int sndbuf = kSndBufBytes;
		if (setsockopt(fd(), SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) != 0)
			return sys_error(errno, "SO_SNDBUFFORCE on the AF_XDP socket of " + ifname);
	}
	if (xskmap_fd >= 0) {
		if (int err = xsk_socket__update_xskmap(xsk_, xskmap_fd); err)
			return sys_error(err, "register the socket on " + ifname + " in its XSKMAP");
	}
	// First half of the frames for RX, second half for TX.
	uint32_t nrx = frames / 2;
	uint32_t idx = 0;
	uint32_t nfill = std::min(nrx, ring);
	if (xsk_ring_prod__reserve(&r_->fill, nfill, &idx) != nfill)
		return make_error("fill ring reserve failed on " + ifname);
	for (uint32_t i = 0; i < nfill; i++)
		*xsk_ring_prod__fill_addr(&r_->fill, idx + i) = uint64_t(i) * kChunkBytes;
	xsk_ring_prod__submit(&r_->fill, nfill);
	for (uint32_t i = nfill; i < nrx; i++)
		fill_pending_.push_back(uint64_t(i) * kChunkBytes);
	for (uint32_t i = nrx; i < frames; i++)
		tx_pool_.push_back(uint64_t(i) * kChunkBytes);
	return ok_status();
}

uint32_t XskPort::rx_peek(uint32_t n, uint64_t *addr, uint32_t *len)
{
	uint32_t idx = 0;
	uint32_t got = xsk_ring_cons__peek(&r_->rx, n, &idx);
	for (uint32_t i = 0; i < got; i++) {
		const xdp_desc *d = xsk_ring_cons__rx_desc(&r_->rx, idx + i);
		addr[i] = xsk_umem__extract_addr(d->addr) + xsk_umem__extract_offset(d->addr);
		len[i] = d->len;
	}
	if (got)
		xsk_ring_cons__release(&r_->rx, got);
	return got;
}

uint64_t XskPort::rx_stamp(uint64_t addr) const
{
	if ((addr & (kChunkBytes - 1)) < sizeof(qn_rx_meta))
		return 0;
	qn_rx_meta m;
	std::memcpy(&m, area_ + addr - sizeof(m), sizeof(m));
	return m.magic == QN_RX_META_MAGIC ? m.rx_mono_ns : 0;
}

void XskPort::rx_recycle(uint64_t addr)
{
	if ((addr & (kChunkBytes - 1)) >= sizeof(qn_rx_meta))
		std::memset(area_ + addr - sizeof(qn_rx_meta), 0, sizeof(qn_rx_meta));
	fill_pending_.push_back(addr & ~uint64_t(kChunkBytes - 1));
}

void XskPort::refill()
{
	if (fill_pending_.empty())
		return;
	uint32_t n = uint32_t(fill_pending_.size());
	uint32_t room = xsk_prod_nb_free(&r_->fill, n);
	n = std::min(n, room);
	if (n == 0)
		return;
	uint32_t idx = 0;
	if (xsk_ring_prod__reserve(&r_->fill, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++) {
		*xsk_ring_prod__fill_addr(&r_->fill, idx + i) = fill_pending_.back();
		fill_pending_.pop_back();
	}
	xsk_ring_prod__submit(&r_->fill, n);
	if (xsk_ring_prod__needs_wakeup(&r_->fill))
		recvfrom(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
}

uint64_t XskPort::tx_alloc()
{
	if (tx_pool_.empty()) {
		flush();
		if (tx_pool_.empty())
			return UINT64_MAX;
	}
	uint64_t a = tx_pool_.back();
	tx_pool_.pop_back();
	return a;
}

bool XskPort::tx_push(uint64_t addr, uint32_t len)
{
	uint32_t idx = 0;
	if (xsk_ring_prod__reserve(&r_->tx, 1, &idx) != 1) {
		flush();
		if (xsk_ring_prod__reserve(&r_->tx, 1, &idx) != 1)
			return false;
	}
	xdp_desc *d = xsk_ring_prod__tx_desc(&r_->tx, idx);
	d->addr = addr;
	d->len = len;
	d->options = 0;
	xsk_ring_prod__submit(&r_->tx, 1);
	tx_outstanding_++;
	tx_unkicked_++;
	// Copy mode sends at most 32 frames per kick: kick at that batch size.
	if (tx_unkicked_ >= 32)
		flush();
	return true;
}

uint32_t XskPort::tx_in_ring() const
{
	if (!xsk_)
		return 0;
	// The kernel moves the consumer index; the producer index is ours (submitted descriptors).
	return __atomic_load_n(r_->tx.producer, __ATOMIC_RELAXED) - __atomic_load_n(r_->tx.consumer, __ATOMIC_ACQUIRE);
}

void XskPort::flush()
{
	if (!xsk_)
		return;
	// Copy mode transmits only inside a kick (need_wakeup is always set for TX). Kick for frames
	// pushed since the last kick, and again for frames a kick left in the ring (the kernel
	// refused them: send buffer, device busy). Frames the kernel has taken need no kick: their
	// completions arrive when the switch forwards them. (Kicking whenever any frame was
	// outstanding made every pass of every host with frames queued at a switch an empty
	// syscall: docs/PERFORMANCE.md "Empty kicks".)
	if (tx_unkicked_ > 0 || tx_in_ring() > 0) {
		sendto(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, 0);
		kicks_++;
		tx_unkicked_ = 0;
		if (tx_in_ring() > 0)
			tx_held_++;
	}
	uint32_t idx = 0;
	// tx_outstanding_ only grows between reaps: its peak is its value just before one
	// (tx_frames_peak() adds the frames pushed since the last).
	tx_peak_ = std::max(tx_peak_, tx_outstanding_);
	uint32_t done = xsk_ring_cons__peek(&r_->comp, 1024, &idx);
	for (uint32_t i = 0; i < done; i++)
		tx_pool_.push_back(*xsk_ring_cons__comp_addr(&r_->comp, idx + i) & ~uint64_t(kChunkBytes - 1));
	if (done) {
		xsk_ring_cons__release(&r_->comp, done);
		tx_outstanding_ -= done;
	}
}

Result<XskStats> XskPort::stats() const
{
	xdp_statistics s{};
	socklen_t len = sizeof(s);
	if (getsockopt(fd(), SOL_XDP, XDP_STATISTICS, &s, &len) != 0)
		return sys_error(errno, "XDP_STATISTICS on " + ifname_);
	XskStats o;
	o.rx_dropped = s.rx_dropped;
	o.rx_ring_full = s.rx_ring_full;
	o.rx_fill_empty = s.rx_fill_ring_empty_descs;
	o.tx_invalid = s.tx_invalid_descs;
	o.tx_ring_empty = s.tx_ring_empty_descs;
	return o;
}

} // namespace qn::tp

// rawsock.cc - AF_PACKET send/receive.
#include "control/rawsock.h"

#include <arpa/inet.h>
#include <cstring>
#include <optional>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control/netns.h"

namespace qn {
namespace {
// TPACKET_ALIGN(sizeof(tpacket2_hdr)): where a TX frame's data starts in its slot (the uapi
// macro mixes int and size_t, which -Wsign-conversion rejects).
constexpr size_t kTp2DataOff = (sizeof(tpacket2_hdr) + 15) & ~size_t{15};
} // namespace

uint64_t mono_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

Result<RawSocket> RawSocket::open(const std::string &netns, const std::string &ifname, bool qdisc_bypass,
				  bool receive)
{
	// Protocol 0: no packet is delivered to the socket (packet(7)); what it sends still gets
	// its protocol from its Ethernet header (SOCK_RAW).
	const uint16_t proto = receive ? htons(ETH_P_ALL) : 0;
	RawSocket s;
	{
		std::optional<NetnsScope> scope;
		if (!netns.empty()) {
			scope.emplace(netns);
			QN_TRY(scope->status());
		}
		s.fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, proto);
		if (s.fd_ < 0)
			return sys_error(errno, "AF_PACKET socket in " + netns);
		s.ifindex_ = int(if_nametoindex(ifname.c_str()));
		if (s.ifindex_ == 0)
			return sys_error(errno, "no interface " + ifname + " in " + netns);
	}
	sockaddr_ll sll{};
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = proto;
	sll.sll_ifindex = s.ifindex_;
	if (bind(s.fd_, reinterpret_cast<sockaddr *>(&sll), sizeof(sll)) < 0)
		return sys_error(errno, "bind AF_PACKET to " + ifname);
	if (qdisc_bypass) {
		int one = 1;
		if (setsockopt(s.fd_, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0)
			return sys_error(errno, "PACKET_QDISC_BYPASS");
	}
	int buf = 8 << 20;
	setsockopt(s.fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	setsockopt(s.fd_, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	return s;
}

RawSocket::RawSocket(RawSocket &&o) noexcept { *this = std::move(o); }

RawSocket &RawSocket::operator=(RawSocket &&o) noexcept
{
	std::swap(fd_, o.fd_);
	std::swap(ifindex_, o.ifindex_);
	std::swap(ring_, o.ring_);
	std::swap(ring_len_, o.ring_len_);
	std::swap(slots_, o.slots_);
	std::swap(slot_size_, o.slot_size_);
	std::swap(next_, o.next_);
	return *this;
}

RawSocket::~RawSocket()
{
	if (ring_)
		munmap(ring_, ring_len_);
	if (fd_ >= 0)
		close(fd_);
}

Result<size_t> RawSocket::send_batch(const std::vector<Bytes> &frames)
{
	std::vector<const Bytes *> ptrs;
	ptrs.reserve(frames.size());
	for (const auto &f : frames)
		ptrs.push_back(&f);
	return send_batch(ptrs);
}

Result<size_t> RawSocket::send_batch(const std::vector<const Bytes *> &frames)
{
	size_t sent = 0;
	while (sent < frames.size()) {
		mmsghdr msgs[64];
		iovec iov[64];
		unsigned n = 0;
		for (; n < 64 && sent + n < frames.size(); n++) {
			const Bytes &f = *frames[sent + n];
			iov[n].iov_base = const_cast<uint8_t *>(f.data());
			iov[n].iov_len = f.size();
			msgs[n] = mmsghdr{};
			msgs[n].msg_hdr.msg_iov = &iov[n];
			msgs[n].msg_hdr.msg_iovlen = 1;
		}
		int r = sendmmsg(fd_, msgs, n, 0);
		if (r < 0) {
			if (errno == ENOBUFS || errno == EAGAIN)
				return sent; // device queue full: the caller decides whether to retry
			return sys_error(errno, "sendmmsg");
		}
		sent += size_t(r);
		if (unsigned(r) < n)
			break;
	}
	return sent;
}

Status RawSocket::enable_tx_ring(uint32_t slots, uint32_t frame_max)
{
	int v = TPACKET_V2;
	if (setsockopt(fd_, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0)
		return sys_error(errno, "PACKET_VERSION");
	// Each slot holds the tpacket2_hdr and the frame; round up to a power of two >= 4096 so
	// frames never cross a block.
	uint32_t need = uint32_t(kTp2DataOff) + frame_max;
	uint32_t size = 4096;
	while (size < need)
		size <<= 1;
	tpacket_req req{};
	req.tp_block_size = size;
	req.tp_frame_size = size;
	req.tp_block_nr = slots;
	req.tp_frame_nr = slots;
	if (setsockopt(fd_, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0)
		return sys_error(errno, "PACKET_TX_RING");
	ring_len_ = size_t(size) * slots;
	void *m = mmap(nullptr, ring_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
	if (m == MAP_FAILED)
		return sys_error(errno, "mmap TX ring");
	ring_ = static_cast<uint8_t *>(m);
	slots_ = slots;
	slot_size_ = size;
	next_ = 0;
	return ok_status();
}

Result<size_t> RawSocket::ring_send(const std::vector<Bytes> &frames)
{
	if (!ring_)
		return make_error("ring_send without enable_tx_ring");
	size_t queued = 0;
	for (const Bytes &f : frames) {
		auto *hdr = reinterpret_cast<tpacket2_hdr *>(ring_ + size_t(next_) * slot_size_);
		if (__atomic_load_n(&hdr->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE)
			break;
		if (f.size() + kTp2DataOff > slot_size_)
			return make_error("frame larger than the TX ring slot");
		uint8_t *data = reinterpret_cast<uint8_t *>(hdr) + kTp2DataOff;
		std::memcpy(data, f.data(), f.size());
		hdr->tp_len = uint32_t(f.size());
		__atomic_store_n(&hdr->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		next_ = (next_ + 1) % slots_;
		queued++;
	}
	if (queued && send(fd_, nullptr, 0, 0) < 0 && errno != ENOBUFS && errno != EAGAIN)
		return sys_error(errno, "TX ring kick");
	return queued;
}

Result<size_t> RawSocket::recv(Bytes &buf, int timeout_ms)
{
	pollfd p{fd_, POLLIN, 0};
	int r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return sys_error(errno, "poll");
	if (r == 0)
		return size_t(0);
	buf.resize(65536);
	sockaddr_ll from{};
	socklen_t fl = sizeof(from);
	ssize_t n = recvfrom(fd_, buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr *>(&from), &fl);
	if (n < 0) {
		if (errno == EAGAIN)
			return size_t(0);
		return sys_error(errno, "recvfrom");
	}
	buf.resize(size_t(n));
	if (from.sll_pkttype == PACKET_OUTGOING)
		return recv(buf, 0); // our own transmissions echoed back; skip them
	return size_t(n);
}

} // namespace qn

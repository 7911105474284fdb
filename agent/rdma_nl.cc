// rdma_nl.cc - rdma netlink QP dump (rdma_nl.h).
#include "agent/rdma_nl.h"

#include <cerrno>
#include <cstring>
#include <map>

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <unistd.h>

namespace qn::agent {
namespace {

// Netlink framing without the kernel header's macros (their int arithmetic trips -Wsign-conversion).
constexpr size_t kNlaHdr = 4;     // NLA_HDRLEN
constexpr size_t kNlmsgHdr = 16;  // NLMSG_HDRLEN
constexpr size_t align4(size_t n) { return (n + 3) & ~size_t(3); }

struct Fd {
	int fd = -1;
	~Fd()
	{
		if (fd >= 0)
			close(fd);
	}
};

// Walk the attributes in [p, p + len): fn(type, data, size).
template <typename F> void attrs(const uint8_t *p, size_t len, F fn)
{
	while (len >= sizeof(nlattr)) {
		nlattr a;
		std::memcpy(&a, p, sizeof(a));
		if (a.nla_len < sizeof(nlattr) || a.nla_len > len)
			return;
		fn(uint16_t(a.nla_type & NLA_TYPE_MASK), p + kNlaHdr, size_t(a.nla_len) - kNlaHdr);
		const size_t step = align4(a.nla_len);
		if (step >= len)
			return;
		p += step;
		len -= step;
	}
}

uint32_t u32_of(const uint8_t *d, size_t n)
{
	uint32_t v = 0;
	if (n >= 4)
		std::memcpy(&v, d, 4);
	return v;
}

// Send one dump request (cmd, optional device index) and hand every reply message's attributes
// to fn(data, len). Return: error naming the step.
template <typename F> Status dump(int fd, uint32_t seq, uint16_t cmd, const uint32_t *dev_index, F fn)
{
	alignas(nlmsghdr) uint8_t req[kNlmsgHdr + kNlaHdr + 4] = {};
	auto *h = reinterpret_cast<nlmsghdr *>(req);
	h->nlmsg_len = kNlmsgHdr;
	h->nlmsg_type = uint16_t(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd));
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	h->nlmsg_seq = seq;
	if (dev_index) {
		nlattr a{uint16_t(kNlaHdr + 4), RDMA_NLDEV_ATTR_DEV_INDEX};
		std::memcpy(req + kNlmsgHdr, &a, sizeof(a));
		std::memcpy(req + kNlmsgHdr + kNlaHdr, dev_index, 4);
		h->nlmsg_len += kNlaHdr + 4;
	}
	sockaddr_nl k{};
	k.nl_family = AF_NETLINK;
	if (sendto(fd, req, h->nlmsg_len, 0, reinterpret_cast<sockaddr *>(&k), sizeof(k)) < 0)
		return sys_error(errno, "rdma netlink: send the dump request");
	alignas(nlmsghdr) static thread_local uint8_t buf[64 * 1024];
	for (int rounds = 0; rounds < 10000; rounds++) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return sys_error(errno, "rdma netlink: receive");
		}
		size_t off = 0;
		while (off + kNlmsgHdr <= size_t(n)) {
			nlmsghdr m;
			std::memcpy(&m, buf + off, sizeof(m));
			if (m.nlmsg_len < kNlmsgHdr || off + m.nlmsg_len > size_t(n))
				break;
			const uint8_t *body = buf + off + kNlmsgHdr;
			const size_t blen = m.nlmsg_len - kNlmsgHdr;
			off += align4(m.nlmsg_len);
			if (m.nlmsg_seq != seq)
				continue;
			if (m.nlmsg_type == NLMSG_DONE)
				return ok_status();
			if (m.nlmsg_type == NLMSG_ERROR) {
				int err = 0;
				if (blen >= sizeof(int))
					std::memcpy(&err, body, sizeof(int));
				if (err == 0)
					return ok_status();
				return sys_error(-err, "rdma netlink: the dump (command " + std::to_string(cmd) + ")");
			}
			fn(body, blen);
		}
	}
	return make_error("rdma netlink: the dump did not end");
}

} // namespace

Result<std::vector<RdmaQp>> rdma_qps(const std::string &prefix)
{
	Fd s;
	s.fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (s.fd < 0)
		return sys_error(errno, "rdma netlink: socket (a kernel without RDMA support?)");
	timeval tv{1, 0};
	setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	// 1. the devices
	std::map<uint32_t, std::string> devs;
	QN_TRY(dump(s.fd, 1, RDMA_NLDEV_CMD_GET, nullptr, [&](const uint8_t *d, size_t n) {
		uint32_t idx = UINT32_MAX;
		std::string name;
		attrs(d, n, [&](uint16_t t, const uint8_t *v, size_t len) {
			if (t == RDMA_NLDEV_ATTR_DEV_INDEX)
				idx = u32_of(v, len);
			else if (t == RDMA_NLDEV_ATTR_DEV_NAME)
				name.assign(reinterpret_cast<const char *>(v), strnlen(reinterpret_cast<const char *>(v), len));
		});
		if (idx != UINT32_MAX && name.rfind(prefix, 0) == 0)
			devs[idx] = name;
	}));
	// 2. each device's QPs
	std::vector<RdmaQp> out;
	uint32_t seq = 2;
	for (const auto &[idx, name] : devs) {
		QN_TRY(dump(s.fd, seq++, RDMA_NLDEV_CMD_RES_QP_GET, &idx, [&](const uint8_t *d, size_t n) {
			attrs(d, n, [&](uint16_t t, const uint8_t *v, size_t len) {
				if (t != RDMA_NLDEV_ATTR_RES_QP)
					return;
				attrs(v, len, [&](uint16_t et, const uint8_t *ev, size_t elen) {
					if (et != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
						return;
					RdmaQp q;
					q.dev = name;
					q.dev_index = idx;
					attrs(ev, elen, [&](uint16_t at, const uint8_t *av, size_t alen) {
						if (at == RDMA_NLDEV_ATTR_RES_LQPN)
							q.lqpn = u32_of(av, alen);
						else if (at == RDMA_NLDEV_ATTR_RES_RQPN) {
							q.rqpn = u32_of(av, alen);
							q.has_rqpn = true;
						} else if (at == RDMA_NLDEV_ATTR_RES_TYPE && alen >= 1)
							q.type = av[0];
						else if (at == RDMA_NLDEV_ATTR_RES_STATE && alen >= 1)
							q.state = av[0];
					});
					out.push_back(q);
				});
			});
		}));
	}
	return out;
}

} // namespace qn::agent

# goodput.awk - per-window goodput of every traced pair from `quench gen --trace-out` output
# (pair,t_ns,rate_bps,window_bytes,acked_bytes; fabric ns) and Jain's fairness index per window.
# Input: as gen writes it (grouped by pair, time ascending).
# Vars: from, to, win (fabric ns). Prints "t_ns jain total_gbps gbps_pair1 gbps_pair2 ..." per window.
BEGIN { FS = "," }
NR > 1 { n[$1]++; T[$1, n[$1]] = $2; A[$1, n[$1]] = $5; if (!($1 in seen)) { seen[$1] = 1; pairs[++np] = $1 } }
function acked(p, t,   i, v) { v = 0; for (i = 1; i <= n[p]; i++) { if (T[p, i] > t) break; v = A[p, i] } return v }
END {
	for (t = from; t + win <= to; t += win) {
		s = 0; s2 = 0; line = ""
		for (k = 1; k <= np; k++) {
			x = (acked(pairs[k], t + win) - acked(pairs[k], t)) * 8 / win  # Gbit/s (bytes*8/ns)
			s += x; s2 += x * x; line = line sprintf(" %.3f", x)
		}
		j = s2 > 0 ? s * s / (np * s2) : 0
		printf "%d %.4f %.3f%s\n", t, j, s, line
	}
}

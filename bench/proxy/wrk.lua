-- wrk script of bench/proxy.sh.
--
-- With BENCH_TARGET set (an absolute URI such as http://127.0.0.1:18080/1k), every request goes
-- to the URL given to wrk (a forward proxy) with BENCH_TARGET as its request target and
-- BENCH_TARGET's host:port as its Host header, as a proxy-aware client would send it. Without
-- it, requests are wrk's own (origin form).
--
-- At the end it prints one line that bench/proxy.sh reads:
--   wrk-result requests=N duration_us=N bytes=N connect=N read=N write=N status=N timeout=N p50_us=N

local target = os.getenv("BENCH_TARGET")
if target and target ~= "" then
	wrk.path = target
	wrk.headers["Host"] = target:match("^%a+://([^/]+)")
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("wrk-result requests=%d duration_us=%d bytes=%d connect=%d read=%d " ..
		"write=%d status=%d timeout=%d p50_us=%d\n", summary.requests, summary.duration,
		summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
		latency:percentile(50)))
end

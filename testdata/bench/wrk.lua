-- wrk.lua makes wrk print its results as one JSON line after its own
-- report, for the load benchmark of bench_test.go. Errors count every
-- socket error (connect, read, write, timeout) and every response with a
-- status of 400 or more; the benchmark checks beforehand that each URL
-- answers 200. Latencies are in microseconds.
done = function(summary, latency, requests)
  local e = summary.errors
  local socket = e.connect + e.read + e.write + e.timeout
  io.write(string.format(
    '\n{"requests":%d,"durationUS":%d,"errors":%d,"statusErrors":%d,"socketErrors":%d,' ..
    '"p50US":%d,"p99US":%d,"meanUS":%.1f,"maxUS":%d}\n',
    summary.requests, summary.duration, socket + e.status, e.status, socket,
    latency:percentile(50), latency:percentile(99), latency.mean, latency.max))
end

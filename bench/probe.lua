-- wrk script: cycles through bench/fens-5piece.txt, one GET /api/v1/probe each.
local fens = {}
local i = 0

local function urlencode(s)
  return (s:gsub("[^%w%-%._/]", function(c) return string.format("%%%02X", string.byte(c)) end))
end

function init(args)
  local path = args[1] or "bench/fens-5piece.txt"
  for line in io.lines(path) do
    if #line > 0 then fens[#fens + 1] = "/api/v1/probe?fen=" .. urlencode(line) end
  end
end

function request()
  i = i % #fens + 1
  return wrk.format("GET", fens[i])
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d errors_status=%d rps=%.0f p50_ms=%.3f p99_ms=%.3f\n",
    summary.requests, summary.errors.status, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end

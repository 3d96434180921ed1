-- wrk script: cycles through a FEN list, one GET per FEN.
--   wrk ... -s bench/probe.lua URL -- [FEN_FILE] [PATH] [ACCEPT]
-- FEN_FILE defaults to bench/fens-5piece.txt, PATH to /api/v1/probe.
local fens = {}
local i = 0
local headers = {}

local function urlencode(s)
  return (s:gsub("[^%w%-%._/]", function(c) return string.format("%%%02X", string.byte(c)) end))
end

function init(args)
  local path = args[1] or "bench/fens-5piece.txt"
  local route = args[2] or "/api/v1/probe"
  if args[3] then headers["Accept"] = args[3] end
  for line in io.lines(path) do
    if #line > 0 then fens[#fens + 1] = route .. "?fen=" .. urlencode(line) end
  end
end

function request()
  i = i % #fens + 1
  return wrk.format("GET", fens[i], headers)
end

function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d errors_status=%d rps=%.0f p50_ms=%.3f p99_ms=%.3f bytes_per_request=%.0f\n",
    summary.requests, summary.errors.status, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.bytes / math.max(summary.requests, 1)))
end

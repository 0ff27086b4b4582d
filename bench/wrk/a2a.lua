-- wrk script shared by every scenario of bench/run.py.
--
--   wrk ... -s bench/wrk/a2a.lua URL -- METHOD PATH TEMPLATE_FILE NONCE EXPECTS [HEADER ...]
--
-- * TEMPLATE_FILE holds the request body; each "@MID@" in it is replaced by an id that is
--   fresh for every request ("<nonce>-<thread>-<counter>"), so every message has a new
--   messageId (and every JSON-RPC call a new id).  "-" means no body (GET).
-- * EXPECTS is a list of substrings separated by "|" that a good response body must all
--   contain; a body containing "\"error\"" is bad whatever else it holds.  A response is
--   counted "ok" only when its status is 2xx and its body is good; anything else is "bad"
--   (JSON-RPC errors come back with HTTP 200, so the status alone proves nothing).
-- * each HEADER is "Name: value".
--
-- done() prints one line "WRKJSON {...}" (latencies in microseconds) and, if a response was
-- bad, "WRKBAD <status> <first 300 bytes of its body>".

local threads = {}
local thread_count = 0

function setup(thread)
   thread_count = thread_count + 1
   thread:set("tid", thread_count)
   table.insert(threads, thread)
end

local method, path, headers, pieces, prefix
local expects = {}
local counter = 0
ok = 0
bad = 0
bad_sample = ""

local function split(s, sep)
   local out = {}
   local start = 1
   while true do
      local i, j = string.find(s, sep, start, true)
      if not i then
         table.insert(out, string.sub(s, start))
         return out
      end
      table.insert(out, string.sub(s, start, i - 1))
      start = j + 1
   end
end

function init(args)
   method = args[1]
   path = args[2]
   local template_file = args[3]
   prefix = string.format("%s-%d-", args[4], tid or 0)
   if args[5] ~= nil and args[5] ~= "" then
      expects = split(args[5], "|")
   end
   headers = {}
   for i = 6, #args do
      local name, value = string.match(args[i], "^([^:]+):%s*(.*)$")
      headers[name] = value
   end
   if template_file ~= "-" then
      local f = assert(io.open(template_file, "r"))
      pieces = split(f:read("*a"), "@MID@")
      f:close()
   end
end

function request()
   counter = counter + 1
   local body = nil
   if pieces ~= nil then
      body = table.concat(pieces, prefix .. counter)
   end
   return wrk.format(method, path, headers, body)
end

local function good(body)
   if body == nil or string.find(body, '"error"', 1, true) then
      return false
   end
   for _, e in ipairs(expects) do
      if not string.find(body, e, 1, true) then
         return false
      end
   end
   return true
end

function response(status, hdrs, body)
   if status >= 200 and status < 300 and good(body) then
      ok = ok + 1
   else
      bad = bad + 1
      if bad_sample == "" then
         bad_sample = tostring(status) .. " " .. string.sub(body or "", 1, 300)
      end
   end
end

function done(summary, latency, requests)
   local total_ok, total_bad, sample = 0, 0, ""
   for _, t in ipairs(threads) do
      total_ok = total_ok + (t:get("ok") or 0)
      total_bad = total_bad + (t:get("bad") or 0)
      local s = t:get("bad_sample") or ""
      if sample == "" and s ~= "" then
         sample = s
      end
   end
   local e = summary.errors
   io.write(string.format(
      'WRKJSON {"duration_us":%d,"requests":%d,"bytes":%d,"ok":%d,"bad":%d,' ..
      '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,' ..
      '"timeouts":%d,"lat_mean_us":%.1f,"lat_max_us":%d,"lat_p50_us":%d,"lat_p90_us":%d,' ..
      '"lat_p99_us":%d,"lat_p999_us":%d}\n',
      summary.duration, summary.requests, summary.bytes, total_ok, total_bad,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency.mean, latency.max, latency:percentile(50), latency:percentile(90),
      latency:percentile(99), latency:percentile(99.9)))
   if sample ~= "" then
      io.write("WRKBAD " .. string.gsub(sample, "[\r\n]", " ") .. "\n")
   end
end

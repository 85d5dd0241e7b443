"""The server-side scripts of the shared limiter (`gateway.upstream.limits.shared`).

Each script runs atomically on the Redis-protocol server, which is what makes check-and-
take exact across every worker and node: no other client's command runs between a
script's check and its take. Time is the server's (`TIME`), so nodes with skewed clocks
still share one window.

Keys of one API key share a hash tag (`{key_id}`), so a cluster would keep them on one
shard. Per key:

- `req`  sorted set: one member per admitted request, scored by its admission (ms);
- `tok`  sorted set: one member per token reservation or extra charge, same scores;
- `amt`  hash: each `tok` member's amount, and `_total` (their sum);
- `infl` sorted set: the requests in flight, scored by when their lease expires. A
  worker renews its live leases; a crashed worker's expire and free their slots;
- `day`, `month` strings: admitted requests of the UTC day and month (with expiry).

Every key expires once idle (the windows a minute after their newest entry), so the
server's memory stays bounded without a sweep.
"""

from __future__ import annotations

from gateway.platform.resp import Script

# Statuses returned by ADMIT (first element of its reply).
OK, MONTHLY, DAILY, RPM, TPM, CONCURRENT, NEEDS_SEED = 0, 1, 2, 3, 4, 5, 9

_PRELUDE = """
local W = 60000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# One request's end: its real token count replaces its reservation (or, once the
# reservation has left the window, an extra charge is added), and its slot is given back.
_SETTLE_ONE = """
local function settle(tok, amt, infl, id, actual, reserved, release, extra)
  if actual >= 0 then
    local at = redis.call('ZSCORE', tok, id)
    if at and tonumber(at) > now - W then
      local old = tonumber(redis.call('HGET', amt, id) or '0')
      redis.call('HSET', amt, id, actual)
      redis.call('HINCRBY', amt, '_total', actual - old)
    elseif actual > reserved then
      redis.call('ZADD', tok, now, extra)
      redis.call('HSET', amt, extra, actual - reserved)
      redis.call('HINCRBY', amt, '_total', actual - reserved)
      redis.call('PEXPIRE', tok, W + 1000)
      redis.call('PEXPIRE', amt, W + 1000)
    end
  end
  if release == '1' then redis.call('ZREM', infl, id) end
end
"""

# Several ends of requests in one call (one round trip for a batch; the settle workers
# batch the ends of one API key, whose keys share a hash tag).
# KEYS: tok amt infl, repeated per settlement
# ARGV: id actual(-1: no settlement) reserved release(1/0) extra_id, repeated likewise
SETTLE = Script(
    _PRELUDE
    + _SETTLE_ONE
    + """
local n = #KEYS / 3
for i = 0, n - 1 do
  local k, a = i * 3, i * 5
  settle(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], tonumber(ARGV[a + 2]),
         tonumber(ARGV[a + 3]), ARGV[a + 4], ARGV[a + 5])
end
return n
"""
)

# KEYS: req tok amt infl day month
# ARGV: rpm tpm concurrent daily monthly need id lease_ms counts seed_day seed_month
#       day_ttl_s month_ttl_s take, then the ends of this key's requests this process has
#       not sent yet (ARGV 15 on, five each as in SETTLE): applied first, so a slot given
#       back just before is free for this admission, and no round trip of their own.
# Reply: {status, wait_ms (-1 none), now_ms, requests, requests_reset_ms, tokens,
#         tokens_reset_ms, inflight, daily, monthly}
ADMIT = Script(
    _PRELUDE
    + _SETTLE_ONE
    + """
local req, tok, amt, infl, day, month = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
for i = 15, #ARGV, 5 do
  settle(tok, amt, infl, ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3],
         ARGV[i + 4])
end
local rpm, tpm, conc = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local daily, monthly = tonumber(ARGV[4]), tonumber(ARGV[5])
local need, id, lease = tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local counts, take = ARGV[9] == '1', ARGV[14] == '1'

redis.call('ZREMRANGEBYSCORE', req, '-inf', now - W)
local gone = redis.call('ZRANGEBYSCORE', tok, '-inf', now - W)
if #gone > 0 then
  local freed = 0
  for i = 1, #gone, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #gone) do chunk[#chunk + 1] = gone[j] end
    for _, a in ipairs(redis.call('HMGET', amt, unpack(chunk))) do
      freed = freed + (tonumber(a) or 0)
    end
    redis.call('HDEL', amt, unpack(chunk))
  end
  redis.call('HINCRBY', amt, '_total', -freed)
  redis.call('ZREMRANGEBYSCORE', tok, '-inf', now - W)
end
redis.call('ZREMRANGEBYSCORE', infl, '-inf', now)

local d, m = 0, 0
if counts then
  local have_d, have_m = redis.call('EXISTS', day) == 1, redis.call('EXISTS', month) == 1
  if not (have_d and have_m) then
    if ARGV[10] == '' then return {9, -1, now, 0, now, 0, now, 0, 0, 0} end
    if not have_d then redis.call('SET', day, ARGV[10], 'EX', ARGV[12]) end
    if not have_m then redis.call('SET', month, ARGV[11], 'EX', ARGV[13]) end
  end
  d = tonumber(redis.call('GET', day))
  m = tonumber(redis.call('GET', month))
end
local used_r = redis.call('ZCARD', req)
local used_t = tonumber(redis.call('HGET', amt, '_total') or '0')
local used_c = redis.call('ZCARD', infl)

local function figures(status, wait)
  local rr, tr = now, now
  local newest = redis.call('ZRANGE', req, -1, -1, 'WITHSCORES')
  if #newest > 0 then rr = tonumber(newest[2]) + W end
  newest = redis.call('ZRANGE', tok, -1, -1, 'WITHSCORES')
  if #newest > 0 then tr = tonumber(newest[2]) + W end
  return {status, wait, now, used_r, rr, used_t, tr, used_c, d, m}
end

if not take then return figures(0, -1) end
if counts then
  if monthly >= 0 and m >= monthly then return figures(1, -1) end
  if daily >= 0 and d >= daily then return figures(2, -1) end
end
if used_r >= rpm then
  local e = redis.call('ZRANGE', req, used_r - rpm, used_r - rpm, 'WITHSCORES')
  return figures(3, tonumber(e[2]) + W - now)
end
if need > tpm then return figures(4, -1) end
local excess = used_t + need - tpm
if excess > 0 then
  local entries = redis.call('ZRANGE', tok, 0, -1, 'WITHSCORES')
  local freed = 0
  for i = 1, #entries, 2 do
    freed = freed + (tonumber(redis.call('HGET', amt, entries[i])) or 0)
    if freed >= excess then return figures(4, tonumber(entries[i + 1]) + W - now) end
  end
  return figures(4, -1)
end
if used_c >= conc then return figures(5, -1) end

redis.call('ZADD', req, now, id)
redis.call('ZADD', tok, now, id)
redis.call('HSET', amt, id, need)
redis.call('HINCRBY', amt, '_total', need)
redis.call('ZADD', infl, now + lease, id)
redis.call('PEXPIRE', req, W + 1000)
redis.call('PEXPIRE', tok, W + 1000)
redis.call('PEXPIRE', amt, W + 1000)
redis.call('PEXPIRE', infl, lease + 1000)
used_r, used_t, used_c = used_r + 1, used_t + need, used_c + 1
if counts then
  d = redis.call('INCR', day)
  m = redis.call('INCR', month)
end
return figures(0, -1)
"""
)

# KEYS: the `infl` set of each live hold; ARGV: lease_ms, then each hold's id.
RENEW = Script(
    _PRELUDE
    + """
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', now + lease, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], lease + 1000)
end
return #KEYS
"""
)

"""The server-side scripts of the shared agent counters (`gateway.agents.shared`).

Each runs atomically on the Redis-protocol server, so an agent's check-and-take is exact
across every worker and node, as the key limits' scripts are
(`gateway.upstream.limits.lua`). Time is the server's. Keys of one agent share a hash
tag (`{agent_id}`):

- `req`  sorted set: one member per admitted request, scored by its admission (ms);
- `ref`  sorted set: the rpm refusals (auto-suspension's abuse window);
- `day`, `month` hashes: committed (`c`, `au`, `op`, `et`: cost, audio minutes, OCR
  pages, embedding tokens; settled plus reserved) and settled (`sc`, `sau`, `sop`,
  `set`) amounts of the UTC day and month (expiring after the period);
- `ses`  hash: per session, committed cost (`<session>`) and settled cost
  (`<session>\\ns`);
- `seen` sorted set: sessions by last activity (ms), renewed while a request is in flight,
  so the active sessions are those seen within the idle time;
- `infl` sorted set: reservations in flight, scored by their lease's end; `res` hash: each
  one's estimate, session, day and month (JSON). A reservation whose lease ends (its
  worker crashed) is given back by the next script that runs for the agent.

Floats go out as strings (a Lua number would be cut to an integer by the protocol).
"""

from __future__ import annotations

from gateway.platform.resp import Script

# KEYS: req ref day month ses seen infl res
_PRELUDE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local req, ref, day, month, ses, seen, infl, res =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local W = 60000
local UNITS = {'c', 'au', 'op', 'et'}
local function f(key, field)
  return tonumber(redis.call('HGET', key, field) or '0')
end
local function s(x) return string.format('%.17g', x) end

-- Give back the reservations whose lease has ended.
local function sweep(day_name, month_name)
  local gone = redis.call('ZRANGEBYSCORE', infl, '-inf', now)
  for _, id in ipairs(gone) do
    local raw = redis.call('HGET', res, id)
    if raw then
      local r = cjson.decode(raw)
      for i, u in ipairs(UNITS) do
        if r.day == day_name then redis.call('HINCRBYFLOAT', day, u, -r.est[i]) end
        if r.month == month_name then redis.call('HINCRBYFLOAT', month, u, -r.est[i]) end
      end
      redis.call('HINCRBYFLOAT', ses, r.session, -r.est[1])
      redis.call('HDEL', res, id)
    end
    redis.call('ZREM', infl, id)
  end
end
"""

# ARGV: day_name month_name session idle_ms lease_ms take(1/0) id
#       limits (10, -1 none): rpm concurrent per_session daily monthly
#                             au_daily op_daily et_daily au_monthly op_monthly
#       wanted (4): c au op et
#       seeds: day(8 or '') month(8 or '') session(2 or '')  (committed = settled)
# Reply: {status, then figures as strings; see `gateway.agents.shared.figures_of`}
ADMIT = Script(
    _PRELUDE
    + """
local day_name, month_name, session = ARGV[1], ARGV[2], ARGV[3]
local idle, lease, take, id = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1', ARGV[7]
local L = {}
for i = 1, 10 do L[i] = tonumber(ARGV[7 + i]) end
local want = {}
for i = 1, 4 do want[i] = tonumber(ARGV[17 + i]) end
local seed_day, seed_month, seed_ses = ARGV[22], ARGV[23], ARGV[24]

local have_d, have_m = redis.call('EXISTS', day) == 1, redis.call('EXISTS', month) == 1
local have_s = redis.call('HEXISTS', ses, session .. '\\ns') == 1
if not (have_d and have_m and have_s) then
  if seed_day == '' then return {'seed'} end
  local parts = {}
  for v in string.gmatch(seed_day .. ',' .. seed_month .. ',' .. seed_ses, '([^,]+)') do
    parts[#parts + 1] = v
  end
  for i, u in ipairs(UNITS) do
    if not have_d then
      redis.call('HSET', day, u, parts[i], 's' .. u, parts[i])
    end
    if not have_m then
      redis.call('HSET', month, u, parts[4 + i], 's' .. u, parts[4 + i])
    end
  end
  redis.call('EXPIRE', day, 2 * 86400)
  redis.call('EXPIRE', month, 32 * 86400)
  if not have_s then
    redis.call('HSET', ses, session, parts[9], session .. '\\ns', parts[9])
  end
end
sweep(day_name, month_name)
redis.call('ZREMRANGEBYSCORE', req, '-inf', now - W)
redis.call('ZREMRANGEBYSCORE', ref, '-inf', now - W)

local function figures(status)
  local out = {status}
  for _, key in ipairs({day, month}) do
    for _, u in ipairs(UNITS) do out[#out + 1] = s(f(key, u)) end
    for _, u in ipairs(UNITS) do out[#out + 1] = s(f(key, 's' .. u)) end
  end
  out[#out + 1] = s(f(ses, session))
  out[#out + 1] = s(f(ses, session .. '\\ns'))
  local last = tonumber(redis.call('ZSCORE', seen, session) or '-1')
  out[#out + 1] = (last >= 0 and last > now - idle) and '1' or '0'
  out[#out + 1] = tostring(redis.call('ZCOUNT', seen, '(' .. (now - idle), '+inf'))
  local used = redis.call('ZCARD', req)
  out[#out + 1] = tostring(used)
  local first = redis.call('ZRANGE', req, 0, 0, 'WITHSCORES')
  out[#out + 1] = tostring(#first > 0 and (tonumber(first[2]) + W - now) or 0)
  out[#out + 1] = tostring(redis.call('ZCARD', ref))
  out[#out + 1] = tostring(redis.call('ZCARD', infl))
  return out
end

if not take then return figures('ok') end

local used = redis.call('ZCARD', req)
if L[1] >= 0 and used >= L[1] then
  redis.call('ZADD', ref, now, id)
  redis.call('PEXPIRE', ref, W + 1000)
  return figures('requests_per_minute')
end
local last = tonumber(redis.call('ZSCORE', seen, session) or '-1')
local active_here = last >= 0 and last > now - idle
if L[2] >= 0 and not active_here then
  if redis.call('ZCOUNT', seen, '(' .. (now - idle), '+inf') >= L[2] then
    return figures('concurrent_sessions')
  end
end
local costs = {{L[3], f(ses, session), 'cost_per_session'}, {L[4], f(day, 'c'), 'cost_daily'},
  {L[5], f(month, 'c'), 'cost_monthly'}}
for _, c in ipairs(costs) do
  if c[1] >= 0 and c[2] >= c[1] then return figures(c[3]) end
end
local units = {{L[6], day, 2, 'audio_minutes_daily'}, {L[7], day, 3, 'ocr_pages_daily'},
  {L[8], day, 4, 'embedding_tokens_daily'}, {L[9], month, 2, 'audio_minutes_monthly'},
  {L[10], month, 3, 'ocr_pages_monthly'}}
for _, u in ipairs(units) do
  local wanted = want[u[3]]
  if u[1] >= 0 and wanted > 0 and f(u[2], UNITS[u[3]]) + wanted > u[1] then
    return figures(u[4])
  end
end

local before = figures('ok')
redis.call('ZADD', req, now, id)
redis.call('PEXPIRE', req, W + 1000)
for i, u in ipairs(UNITS) do
  redis.call('HINCRBYFLOAT', day, u, want[i])
  redis.call('HINCRBYFLOAT', month, u, want[i])
end
redis.call('HINCRBYFLOAT', ses, session, want[1])
redis.call('ZADD', seen, now, session)
redis.call('ZADD', infl, now + lease, id)
local entry = {session = session, day = day_name, month = month_name, est = want}
redis.call('HSET', res, id, cjson.encode(entry))
for _, key in ipairs({ses, seen, infl, res}) do redis.call('EXPIRE', key, 32 * 86400) end
return before
"""
)

# ARGV: day_name month_name id c au op et (the actual amounts)
SETTLE = Script(
    _PRELUDE
    + """
local day_name, month_name, id = ARGV[1], ARGV[2], ARGV[3]
local actual = {tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])}
sweep(day_name, month_name)
local raw = redis.call('HGET', res, id)
local session = ARGV[8]
if raw then
  local r = cjson.decode(raw)
  for i, u in ipairs(UNITS) do
    if r.day == day_name then redis.call('HINCRBYFLOAT', day, u, -r.est[i]) end
    if r.month == month_name then redis.call('HINCRBYFLOAT', month, u, -r.est[i]) end
  end
  redis.call('HINCRBYFLOAT', ses, session, -r.est[1])
  redis.call('HDEL', res, id)
  redis.call('ZREM', infl, id)
end
for i, u in ipairs(UNITS) do
  redis.call('HINCRBYFLOAT', day, u, actual[i])
  redis.call('HINCRBYFLOAT', day, 's' .. u, actual[i])
  redis.call('HINCRBYFLOAT', month, u, actual[i])
  redis.call('HINCRBYFLOAT', month, 's' .. u, actual[i])
end
redis.call('EXPIRE', day, 2 * 86400)
redis.call('EXPIRE', month, 32 * 86400)
redis.call('HINCRBYFLOAT', ses, session, actual[1])
redis.call('HINCRBYFLOAT', ses, session .. '\\ns', actual[1])
redis.call('ZADD', seen, now, session)
return 1
"""
)

# KEYS: pairs (infl, seen) per live reservation; ARGV: lease_ms, then (id, session) pairs.
RENEW = Script(
    """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
for i = 1, #KEYS, 2 do
  local n = (i + 1) / 2
  redis.call('ZADD', KEYS[i], 'XX', now + lease, ARGV[2 * n])
  redis.call('ZADD', KEYS[i + 1], 'XX', now, ARGV[2 * n + 1])
end
return #KEYS / 2
"""
)

-- luacheck's settings for the server's scripts (make luacheck): Lua 5.1,
-- as Redis runs it, with the globals Redis gives every script.
std = "lua51"
read_globals = {
  "redis", "KEYS", "ARGV", "cjson", "bit", "struct", "cmsgpack",
}
-- Scripts that wake the line (line.lua) and never drop a member of it
-- themselves.
for _, s in ipairs({"force", "members"}) do
  files["build/lint/" .. s .. ".lua"] = { ignore = { "211/leave" } }
end

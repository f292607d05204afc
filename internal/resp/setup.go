package resp

import "strings"

// setupCommands are the commands clients send to set up a new connection before any command of their
// own: HELLO, AUTH, CLIENT (SETNAME, SETINFO, ...) and SELECT (go-redis, redis-py 5, node-redis),
// READONLY (a cluster client reading from replicas), and INFO (ioredis's ready check, which holds the
// client's commands until the reply says the server is not loading).
var setupCommands = map[string]bool{"hello": true, "auth": true, "client": true, "select": true, "readonly": true, "info": true}

// SetupCommand reports whether a command named name, sent first on a connection, is part of the
// connection's set-up rather than a command of the client's own (the case of name does not matter).
func SetupCommand(name string) bool { return setupCommands[strings.ToLower(name)] }

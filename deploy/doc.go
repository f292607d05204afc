// Package deploy starts, reaches and hurts the Redis deployments Tenure runs against: a private
// redis-server (without persistence, with RDB snapshots or with an append-only file), miniredis in this
// process, Redis in a container, a user's address, a Sentinel set, a Redis Cluster and independent
// nodes. Each is a Deployment, opened by Open from its spec (the --redis value) and kept in a file (or
// files) of its own: server.go, embedded.go, container.go, external.go, sentinel*.go, cluster*.go,
// independent.go. Every process it starts is a redis-server from internal/redisserver, in its own
// process group, dying with its parent.
//
// The package knows nothing of runs, faults or histories. It is given the proxies it puts in front of
// a node (Proxies; chaos.ForDeploy makes them of toxiproxy links) and the dialer a client connects
// through (Dialer); it gives names of nodes, clients, and the verbs below. Which node a fault aims at,
// when, and what it means for a run is the caller's.
//
// # Nodes and addresses
//
// Every node has two addresses: Listen, where its process listens, and Announced, the address it is
// known by. On one node they are the same. On several, Announced is the node's peer proxy: nodes
// announce it to each other (replica-announce-ip/port, sentinel announce-ip/port, the cluster's
// announced address), replicas replicate through it, sentinels monitor through it, and every address a
// client is told (by a sentinel, in a MOVED or ASK redirect, in CLUSTER SLOTS) is one. So peer traffic
// flows through the peer proxies before and after a promotion, and a fault on a node's PeerLink cuts,
// slows or holds it. A client built by NewClient opens every connection through the Dialer it is
// given, handed the announced address of the node it is for; MapDialer maps each to a link of the
// caller's own and refuses any other address, so a fault on one client's links leaves every other
// client, and the peer traffic, alone. Admin is the harness's own client, straight to the processes.
//
// # What the verbs mean
//
// "The primary" is what Primary resolves: the one node of a single-node deployment ("redis-0"); on a
// Sentinel set the data node a majority of the sentinels name now; on a Redis Cluster the live primary
// serving the key's hash slot, or slot 0's for the key ""; on independent nodes the first node, which
// holds the data not spread over them (one vote of a majority).
//
// Kill(node) ends a process at once (SIGKILL), as a crashed host. A private server loses its dataset
// (its files stay until StartKilled removes them); miniredis stops answering and drops its data; a
// Sentinel set's primary is replaced by a replica once the sentinels agree it is down (down-after);
// a Cluster's primary by its replica once the other primaries agree it failed (cluster-node-timeout),
// which Watch then reports; an independent node is simply gone.
//
// Pause(node) freezes a process (SIGSTOP) until the resume it returns (SIGCONT): connections stay
// open, nothing is answered, then every queued command runs late with the data intact.
//
// StartKilled is "restart empty": every data node Kill ended starts again on its own address with no
// data (a server's RDB and AOF files are removed first). A Sentinel set's node comes back with the
// arguments it first had and the sentinels reconfigure it as a replica in their own time, which is
// not waited for; a Cluster node comes back from its nodes.conf and is waited for until the cluster is
// whole again, as the replica of the node promoted in its place (or, back before the cluster noticed,
// as the primary it was, whose replica then copies its empty dataset).
//
// Save and Reload are "reload from files": Save writes a snapshot now (SAVE); Reload kills the server
// and starts it again in the same directory, loading its append-only file (persistence aof) or its
// last snapshot (rdb, or none after a Save). Only a private server has files.
//
// Promote is a graceful failover of a primary that is up: on a Sentinel set, SENTINEL FAILOVER on the
// first sentinel that accepts it (Sentinel does not stop writes on the old primary first).
//
// Migrate moves a key's hash slot on a Redis Cluster to the first other live primary, key by key with
// a pause between them (SETSLOT IMPORTING and MIGRATING, MIGRATE, SETSLOT NODE), so clients meet ASK
// and then MOVED redirects.
//
// PeerLink is a node's peer proxy (a Cluster node's announced client link; its bus link is
// ClusterNode.BusLink).
//
// # What each deployment refuses
//
// A refusal wraps ErrUnsupported and says which deployment would do it (--redis ...):
//
//	                     Kill Pause StartKilled Save/Reload Promote Migrate PeerLink
//	server[:rdb|:aof]    yes  yes   yes         yes         -       -       -
//	embedded (miniredis) yes  -     yes         -           -       -       -
//	container            -    -     -           -           -       -       -
//	addr=HOST:PORT       -    -     -           -           -       -       -
//	sentinel             yes  yes   yes         -           yes     -       yes
//	cluster              yes  yes   yes         -           -       yes     yes
//	independent          yes  yes   yes         -           -       -       yes
//
// A pause of miniredis, for one, returns "fault not supported here: the embedded Redis (miniredis)
// cannot be paused; use --redis server", and a kill of a user's Redis "fault not supported here: an
// external Redis is not the harness's to kill, restart or pause; use --redis server". A node name the
// deployment does not have is an error of its own, listing the names it has. Refuses answers, from a
// spec alone and before anything starts, whether a deployment kills and pauses.
// A user's address is About.Shared: it may hold others' data, so a run keeps to keys of its own there
// and never flushes it.
//
// # Adding a deployment
//
// Implement Deployment in a file of its own and name it in Open and CheckSpec. A deployment of several
// nodes starts each with internal/redisserver behind a peer proxy made before it starts (pick the port,
// create the proxy towards it, start the process announcing the proxy), and checks it is settled before
// its constructor returns.
package deploy

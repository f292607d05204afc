// Leader election as the seed's Java service does it, on the JDK alone (no Java Redis client is
// installed here, so it speaks RESP itself):
//
//   - every instance writes its heartbeat key every heartbeat interval: SETEX <prefix>heartbeat:<id>
//     <heartbeat TTL> <its clock, ms>;
//   - the leader of a role extends the role's key every renewal interval: GET it, and if it names us,
//     EXPIRE it for a lease TTL;
//   - a follower reads the leader's heartbeat; when it is older than the election timeout (1.5 heartbeat
//     intervals) or gone, the follower deletes the leader's key and takes it with SET NX EX;
//   - on SIGTERM the leader releases with a Lua compare-and-delete.
//
// The timing comes from the harness (docs/protocol.md), scaled to the scenario. Nothing here is meant to
// be correct beyond what the design says: it is the design as a team would ship it, for Tenure to judge.
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

public class Election {
    static final Map<String, String> ENV = System.getenv();
    static final String ID = ENV.get("TENURE_INSTANCE_ID");
    static final String PREFIX = ENV.get("TENURE_KEY_PREFIX");
    static final long TTL_MS = ms("TENURE_LEASE_TTL_MS");
    static final long RENEW_MS = ms("TENURE_RENEW_INTERVAL_MS");
    static final long BEAT_MS = ms("TENURE_HEARTBEAT_INTERVAL_MS");
    static final long BEAT_TTL_MS = ms("TENURE_HEARTBEAT_TTL_MS");
    static final long POLL_MS = ms("TENURE_POLL_INTERVAL_MS");
    static final long OP_MS = ms("TENURE_OP_TIMEOUT_MS");
    static final String HARNESS = ENV.get("TENURE_HARNESS_URL");
    static final String RELEASE =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
    static final HttpClient HTTP = HttpClient.newHttpClient();
    static final CountDownLatch STOPPING = new CountDownLatch(1);

    static long ms(String name) {
        return Long.parseLong(ENV.get(name));
    }

    /** Whole seconds for SETEX and EXPIRE, at least one. */
    static long secs(long millis) {
        return Math.max(1, Math.round(millis / 1000.0));
    }

    public static void main(String[] args) throws Exception {
        if (!"1".equals(ENV.get("TENURE_PROTOCOL"))) {
            System.err.println("unknown process protocol version " + ENV.get("TENURE_PROTOCOL") + "; this instance speaks 1");
            System.exit(2);
        }
        // The harness closes our standard input when it goes away: exit with it.
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (IOException ignored) {
            }
            Runtime.getRuntime().halt(0);
        });
        stdin.setDaemon(true);
        stdin.start();

        String[] hostPort = ENV.get("TENURE_REDIS_ADDR").split(":");
        Redis redis = new Redis(hostPort[0], Integer.parseInt(hostPort[1]), (int) OP_MS);
        List<Role> roles = new ArrayList<>();
        for (String name : ENV.get("TENURE_TARGETS").split(",")) {
            if (!name.isEmpty()) {
                roles.add(new Role(name));
            }
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            STOPPING.countDown(); // SIGTERM: finish the round in flight, release, exit
            try {
                stopped.await(ms("TENURE_STOP_TIMEOUT_MS"), TimeUnit.MILLISECONDS);
            } catch (InterruptedException ignored) {
            }
        }));

        post("/ready", "{}");
        List<Thread> threads = new ArrayList<>();
        threads.add(loop("heartbeat", BEAT_MS, () -> redis.call("SETEX", PREFIX + "heartbeat:" + ID,
                Long.toString(secs(BEAT_TTL_MS)), Long.toString(System.currentTimeMillis()))));
        for (Role r : roles) {
            threads.add(loop("elect " + r.name, RENEW_MS, () -> r.round(redis)));
            threads.add(loop("work " + r.name, POLL_MS, r::work));
        }
        STOPPING.await();
        for (Thread t : threads) {
            t.join();
        }
        for (Role r : roles) {
            if (r.leader) {
                try {
                    redis.call("EVAL", RELEASE, "1", r.key, ID);
                } catch (IOException e) {
                    System.err.println(r.name + ": release failed: " + e.getMessage());
                }
                r.become(false, "released");
            }
        }
        stopped.countDown();
    }

    interface Step {
        void run() throws IOException;
    }

    /** Runs step every interval until the stop, an error only logged. */
    static Thread loop(String what, long everyMs, Step step) {
        Thread t = new Thread(() -> {
            // Every everyMs counted from the start of the round before (a round takes time itself);
            // behind, it does not catch up.
            long due = System.nanoTime();
            do {
                try {
                    step.run();
                } catch (IOException e) {
                    System.err.println(what + ": " + e.getMessage() + "; trying again at the next round");
                }
                due = Math.max(due + everyMs * 1_000_000L, System.nanoTime());
            } while (!pause(Math.max(0L, (due - System.nanoTime()) / 1_000_000L)));
        }, what);
        t.start();
        return t;
    }

    /** Sleeps ms; true when the instance is stopping. */
    static boolean pause(long ms) {
        try {
            return STOPPING.await(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            return true;
        }
    }

    static int post(String path, String json) throws IOException {
        String body = json.substring(0, json.length() - 1) + (json.length() > 2 ? "," : "")
                + "\"clock_ms\":" + System.currentTimeMillis() + "}";
        HttpRequest req = HttpRequest.newBuilder(URI.create(HARNESS + path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        try {
            return HTTP.send(req, HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (InterruptedException e) {
            throw new IOException("interrupted");
        }
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static final class Role {
        final String name;
        final String key;
        volatile boolean leader;

        Role(String name) {
            this.name = name;
            this.key = PREFIX + "lease:" + name;
        }

        void become(boolean lead, String reason) throws IOException {
            leader = lead;
            System.err.println(name + (lead ? " leading (" : " following (") + reason + ")");
            post("/belief", "{\"endpoint\":" + quote(name) + ",\"held\":" + lead + ",\"token\":0,\"reason\":" + quote(reason) + "}");
        }

        /** One election round: renew if we lead, else take over a leader whose heartbeat is stale. */
        void round(Redis redis) throws IOException {
            Object cur = redis.call("GET", key);
            if (ID.equals(cur)) {
                redis.call("EXPIRE", key, Long.toString(secs(TTL_MS)));
                return;
            }
            if (leader) {
                become(false, "lost");
            }
            if (cur != null) {
                Object beat = redis.call("GET", PREFIX + "heartbeat:" + cur);
                long timeout = BEAT_MS * 3 / 2;
                if (beat != null && System.currentTimeMillis() - Long.parseLong((String) beat) <= timeout) {
                    return; // the leader is alive
                }
                redis.call("DEL", key); // its heartbeat is stale: force an election
            }
            if ("OK".equals(redis.call("SET", key, ID, "NX", "EX", Long.toString(secs(TTL_MS))))) {
                become(true, "elected");
            }
        }

        /** While we lead, the work: a poll of the harness. */
        void work() throws IOException {
            if (leader) {
                int status = post("/poll", "{\"endpoint\":" + quote(name) + ",\"token\":0}");
                if (status != 200) {
                    System.err.println(name + ": poll answered " + status);
                }
            }
        }
    }

    /** A RESP client of one connection, one command at a time, every read bounded by the call bound. */
    static final class Redis {
        final String host;
        final int port;
        final int timeoutMs;
        Socket sock;
        InputStream in;
        OutputStream out;

        Redis(String host, int port, int timeoutMs) {
            this.host = host;
            this.port = port;
            this.timeoutMs = timeoutMs;
        }

        synchronized Object call(String... args) throws IOException {
            try {
                if (sock == null) {
                    sock = new Socket();
                    sock.connect(new InetSocketAddress(host, port), timeoutMs);
                    sock.setSoTimeout(timeoutMs);
                    in = new BufferedInputStream(sock.getInputStream());
                    out = sock.getOutputStream();
                }
                ByteArrayOutputStream b = new ByteArrayOutputStream();
                b.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
                for (String a : args) {
                    byte[] v = a.getBytes(StandardCharsets.UTF_8);
                    b.write(("$" + v.length + "\r\n").getBytes(StandardCharsets.UTF_8));
                    b.write(v);
                    b.write("\r\n".getBytes(StandardCharsets.UTF_8));
                }
                out.write(b.toByteArray());
                out.flush();
                return read();
            } catch (IOException e) {
                // A timed-out or broken connection may still carry a late reply: start a new one.
                if (sock != null) {
                    sock.close();
                }
                sock = null;
                throw e;
            }
        }

        Object read() throws IOException {
            String line = line();
            char kind = line.charAt(0);
            String rest = line.substring(1);
            switch (kind) {
                case '+':
                    return rest;
                case '-':
                    throw new IOException("redis: " + rest);
                case ':':
                    return Long.parseLong(rest);
                case '$': {
                    int n = Integer.parseInt(rest);
                    if (n < 0) {
                        return null;
                    }
                    byte[] v = in.readNBytes(n + 2);
                    if (v.length != n + 2) {
                        throw new IOException("redis: connection closed");
                    }
                    return new String(v, 0, n, StandardCharsets.UTF_8);
                }
                case '*': {
                    int n = Integer.parseInt(rest);
                    if (n < 0) {
                        return null;
                    }
                    List<Object> items = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        items.add(read());
                    }
                    return items;
                }
                default:
                    throw new IOException("redis: unexpected reply " + line);
            }
        }

        String line() throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) != '\r') {
                if (c < 0) {
                    throw new IOException("redis: connection closed");
                }
                b.write(c);
            }
            if (in.read() != '\n') {
                throw new IOException("redis: bad line ending");
            }
            return b.toString(StandardCharsets.UTF_8);
        }
    }
}

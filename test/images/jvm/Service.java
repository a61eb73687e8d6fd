// Service is the JVM workload of the apps phase: a small HTTP service on the
// packaged JDK whose requests cost CPU and allocate on the heap, as a
// request-serving Java application does, with the heap it may reach set the
// way such services set it (-Xmx, or MaxRAMPercentage of the limit the JVM
// saw at start).
//
//   GET /work?ms=5&kb=256   burn about ms of CPU, allocating kb of garbage
//   GET /hold?mb=64         keep mb more of live heap (the cache a service grows)
//   GET /heap               the heap's max, committed and used bytes
//   GET /healthz
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;

public final class Service {
  private static final List<byte[]> held = new ArrayList<>();
  private static volatile long sink;

  public static void main(String[] args) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(8080), 128);
    server.setExecutor(Executors.newFixedThreadPool(16));
    server.createContext("/work", ex -> {
      Map<String, String> q = query(ex);
      long ms = Long.parseLong(q.getOrDefault("ms", "5"));
      int kb = Integer.parseInt(q.getOrDefault("kb", "256"));
      long until = System.nanoTime() + ms * 1_000_000L;
      long x = 0;
      while (System.nanoTime() < until) {
        byte[] garbage = new byte[1024];
        x += garbage.length;
        if (kb > 0 && x % (1024L * 64) == 0) {
          for (int i = 0; i < kb / 64; i++) {
            x += new byte[64 * 1024].length;
          }
        }
      }
      sink = x;
      reply(ex, 200, "ok\n");
    });
    server.createContext("/hold", ex -> {
      int mb = Integer.parseInt(query(ex).getOrDefault("mb", "16"));
      // In 64 KiB blocks: a block of a region's size or more is a
      // humongous object to G1, which a heap of a few hundred MiB runs
      // out of long before its bytes are used.
      synchronized (held) {
        for (int i = 0; i < mb * 16; i++) {
          held.add(new byte[64 << 10]);
        }
      }
      reply(ex, 200, "holding " + held.size() / 16 + " MiB\n");
    });
    server.createContext("/heap", ex -> {
      MemoryUsage h = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
      reply(ex, 200, "max " + h.getMax() + "\ncommitted " + h.getCommitted() + "\nused " + h.getUsed() + "\n");
    });
    server.createContext("/healthz", ex -> reply(ex, 200, "ok\n"));
    server.start();
  }

  private static Map<String, String> query(HttpExchange ex) {
    Map<String, String> out = new HashMap<>();
    String raw = ex.getRequestURI().getRawQuery();
    if (raw == null) {
      return out;
    }
    for (String kv : raw.split("&")) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        out.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    return out;
  }

  private static void reply(HttpExchange ex, int code, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(code, b.length);
    try (OutputStream os = ex.getResponseBody()) {
      os.write(b);
    }
  }
}

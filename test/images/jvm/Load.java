// Load is the JVM workload's client, run from a pod of its own: threads
// that each send GET requests to one URL back to back, and every 10 s a
// line of what they saw (requests a second, mean, p50 and p99 latency in
// ms, errors); given SECONDS, it stops after them (a load shaped in
// stages runs one Load per stage). busybox's wget in a static build cannot
// resolve even an IP address without the libraries a static glibc cannot
// load, so the client is Java, on the image's own runtime.
//
//   java -cp /app/service.jar Load URL THREADS [SECONDS]
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

public final class Load {
  private static final List<Long> window = Collections.synchronizedList(new ArrayList<>());
  private static final AtomicLong errors = new AtomicLong();

  public static void main(String[] args) throws Exception {
    URL url = new URL(args[0]);
    int threads = Integer.parseInt(args[1]);
    boolean bounded = args.length > 2;
    long stop = bounded ? System.nanoTime() + Long.parseLong(args[2]) * 1_000_000_000L : 0;
    for (int i = 0; i < threads; i++) {
      Thread t = new Thread(() -> {
        byte[] buf = new byte[4096];
        while (true) {
          long start = System.nanoTime();
          try {
            HttpURLConnection c = (HttpURLConnection) url.openConnection();
            c.setConnectTimeout(5000);
            c.setReadTimeout(30000);
            try (InputStream in = c.getInputStream()) {
              while (in.read(buf) >= 0) {
                // drain
              }
            }
            if (c.getResponseCode() != 200) {
              errors.incrementAndGet();
            }
            window.add(System.nanoTime() - start);
          } catch (Exception e) {
            errors.incrementAndGet();
            try {
              Thread.sleep(500);
            } catch (InterruptedException ie) {
              return;
            }
          }
        }
      });
      t.setDaemon(true);
      t.start();
    }
    while (true) {
      long slept = 10_000;
      if (bounded) {
        slept = Math.max(0, Math.min(slept, (stop - System.nanoTime()) / 1_000_000));
      }
      Thread.sleep(slept);
      List<Long> seen;
      synchronized (window) {
        seen = new ArrayList<>(window);
        window.clear();
      }
      Collections.sort(seen);
      int n = seen.size();
      double mean = 0;
      for (long v : seen) {
        mean += v;
      }
      mean = n == 0 ? 0 : mean / n / 1e6;
      double p50 = n == 0 ? 0 : seen.get(n / 2) / 1e6;
      double p99 = n == 0 ? 0 : seen.get(Math.min(n - 1, (int) (n * 0.99))) / 1e6;
      System.out.printf("rps=%.1f mean_ms=%.2f p50_ms=%.2f p99_ms=%.2f errors=%d%n", n * 1000.0 / Math.max(slept, 1), mean, p50, p99, errors.getAndSet(0));
      if (bounded && System.nanoTime() - stop >= 0) {
        System.exit(0);
      }
    }
  }
}

package dev.aiguard.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;

/**
 * The model server of the {@link LoadRig}, in a JVM of its own so that the rig's CPU figures are
 * the client's alone. Starts the mock model on a free loopback port without faults, prints
 * {@code port=<port>}, then obeys lines on its standard input:
 * {@code pace <firstMs> <intervalMs>} (answers {@code ok}), {@code cpu} (answers its process CPU
 * time in nanoseconds), {@code stats} (the mock's counters) and {@code stop}. It stops by itself
 * when its input ends (the rig is gone) or after its longest life, whichever comes first.
 *
 * <pre>{@code
 * java -cp benchmarks.jar dev.aiguard.benchmarks.load.RigServer 900   # at most 900 s
 * }</pre>
 */
public final class RigServer {

	private RigServer() {
	}

	/**
	 * @param args the longest life in seconds (default 900)
	 * @throws IOException when standard input cannot be read
	 */
	public static void main(String[] args) throws IOException {
		long lifeSeconds = args.length > 0 ? Long.parseLong(args[0]) : 900;
		MockModelServer mock = MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ZERO, Duration.ZERO))
			.random(() -> 1.0)
			.captureLimit(1)
			.start();
		Thread limit = new Thread(() -> {
			try {
				TimeUnit.SECONDS.sleep(lifeSeconds);
			}
			catch (InterruptedException e) {
				return;
			}
			System.err.println("rig server: longest life of " + lifeSeconds + " s reached, stopping");
			Runtime.getRuntime().halt(2);
		}, "rig-server-life");
		limit.setDaemon(true);
		limit.start();
		System.out.println("port=" + mock.port());
		System.out.flush();
		com.sun.management.OperatingSystemMXBean os =
				(com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		String line;
		while ((line = in.readLine()) != null) {
			String[] words = line.trim().split("\\s+");
			if (words[0].equals("stop")) {
				break;
			}
			if (words[0].equals("pace") && words.length == 3) {
				mock.faults(mock.faults().withPace(Long.parseLong(words[1]), Long.parseLong(words[2])));
				System.out.println("ok");
			}
			else if (words[0].equals("cpu")) {
				System.out.println(os.getProcessCpuTime());
			}
			else if (words[0].equals("stats")) {
				System.out.println(mock.stats());
			}
			else {
				System.out.println("unknown command: " + line);
			}
			System.out.flush();
		}
		mock.stop();
		System.exit(0);
	}
}

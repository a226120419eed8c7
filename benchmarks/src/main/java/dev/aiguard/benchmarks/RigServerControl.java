package dev.aiguard.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@link RigServer} process of the load rig: starting it, and its standard input and output
 * (its port, and commands).
 */
final class RigServerControl implements AutoCloseable {

	private final BufferedReader out;
	private final Writer in;
	private final String baseUrl;

	RigServerControl(Process process) throws IOException {
		this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
		this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
		// a JVM option (a profiler) may print lines of its own first
		String line = out.readLine();
		for (int skipped = 0; line != null && !line.startsWith("port=") && skipped < 100; skipped++) {
			line = out.readLine();
		}
		if (line == null || !line.startsWith("port=")) {
			throw new IOException("the rig server did not report its port, said: " + line);
		}
		this.baseUrl = "http://127.0.0.1:" + Integer.parseInt(line.substring(5)) + "/v1";
	}

	String baseUrl() {
		return baseUrl;
	}

	/** @return the server's process CPU time, in nanoseconds */
	synchronized long cpuNanos() throws IOException {
		in.write("cpu\n");
		in.flush();
		String answer = out.readLine();
		try {
			return Long.parseLong(String.valueOf(answer).trim());
		}
		catch (NumberFormatException e) {
			throw new IOException("the rig server did not report its CPU time, said: " + answer, e);
		}
	}

	synchronized void pace(long firstMs, long intervalMs) throws IOException {
		in.write("pace " + firstMs + " " + intervalMs + "\n");
		in.flush();
		String answer = out.readLine();
		if (!"ok".equals(answer)) {
			throw new IOException("the rig server refused the pace: " + answer);
		}
	}

	@Override
	public void close() throws IOException {
		in.write("stop\n");
		in.flush();
		in.close();
	}

	/** Starts the server in a JVM of its own, on this JVM's class path. */
	static Process startServer(RigSettings settings) throws IOException {
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		List<String> command = new ArrayList<>(List.of(java, "-Xmx" + settings.serverHeap(), "-XX:+UseParallelGC"));
		command.addAll(settings.serverOptions());
		command.addAll(List.of("-cp", System.getProperty("java.class.path"), RigServer.class.getName(), "900"));
		ProcessBuilder builder = new ProcessBuilder(command);
		builder.redirectError(ProcessBuilder.Redirect.INHERIT);
		return builder.start();
	}
}

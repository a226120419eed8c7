package dev.aiguard.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;

import dev.aiguard.boot.autoconfigure.AiGuardProperties;
import dev.aiguard.boot.autoconfigure.properties.LoadProperties;
import dev.aiguard.core.Priority;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadLevel;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The load governor in a real browser, with the demo's own governor (a decision every 500 ms, 5 s
 * dwell, capacity 8 requests per second, a score from the model's time to first token and error
 * rate) and its own breaker, in a context of its own whose mock answers in 100 ms. The page turns
 * the mock's load pressure on and the test offers twelve concurrent P0 and P2 requests: the level
 * rises. Where the test needs a steady level it pins it with {@link LoadGovernor#hold(LoadLevel)},
 * as an operator would: held at DEGRADED, P2 is shed with 503 and {@code Retry-After} while P0 is
 * answered, and a P2 question from the page shows the refusal. Released, with the pressure and the
 * load gone, the level comes back to HEALTHY and P2 is answered again.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
		"aiguard.mock.first-token-delay=100ms",
		"aiguard.mock.token-interval=2ms",
		"aiguard.policies.chat.retry.min-backoff=20ms",
		"aiguard.policies.chat.retry.max-backoff=100ms",
		"aiguard.fallback.timeout=1s" })
class LoadBrowserTest {

	/**
	 * The bound of a wait for one quick thing: a local round trip, an answer of the 100 ms mock, the
	 * page's next poll (every second). Those take well under a second on an idle machine; the rest
	 * is slack for a loaded 2-core machine, where twelve concurrent streams and the browser share it.
	 */
	private static final Duration WAIT = DemoTestSupport.WAIT;

	@LocalServerPort
	int port;

	@Autowired
	MockModelServer mock;

	@Autowired
	LocalAccessFilter access;

	@Autowired
	LoadGovernor governor;

	@Autowired
	AiGuardProperties properties;

	private Chromium chromium;
	private WebDriver driver;
	private Disposable load;
	private Disposable pinned;

	@BeforeEach
	void startBrowser() throws IOException {
		chromium = new Chromium("1366,1000");
		driver = chromium.driver();
	}

	@AfterEach
	void stopBrowser() throws IOException {
		if (load != null) {
			load.dispose();
		}
		if (pinned != null) {
			pinned.dispose();
		}
		mock.resetFaults();
		if (chromium != null) {
			chromium.close();
		}
	}

	/** One answer of {@code POST /api/chat}: its priority, status, {@code Retry-After} and body. */
	record Answer(Priority priority, int status, String retryAfter, String body) {
	}

	@Test
	void loadPressureRaisesTheLevelAHeldLevelShedsBatchWorkAndTheReleaseRecovers() throws IOException {
		LoadProperties settings = properties.getLoad();
		Duration interval = Objects.requireNonNull(settings.getInterval(), "the demo sets aiguard.load.interval");
		Duration dwell = Objects.requireNonNull(settings.getDwell(), "the demo sets aiguard.load.dwell");
		driver.get(access.pageAddress());
		WebDriverWait wait = new WebDriverWait(driver, WAIT, Duration.ofMillis(50));
		wait.until(d -> "HEALTHY".equals(level(d)));

		// 1. the page's switch turns the mock's load pressure on
		driver.findElement(By.id("fault-load")).click();
		wait.until(d -> mock.faults().loadPressure() != null);
		assertThat(mock.faults().loadPressure().capacity()).isEqualTo(4);

		// 2. twelve requests at a time, P0 and P2 in turn: the mock serves more than its capacity
		ConcurrentLinkedQueue<Answer> answers = new ConcurrentLinkedQueue<>();
		WebClient web = WebClient.create("http://127.0.0.1:" + port);
		load = Flux.range(0, Integer.MAX_VALUE)
			.flatMap(i -> ask(web, i % 2 == 0 ? Priority.P0 : Priority.P2, "load " + i), 12)
			.subscribe(answers::add);

		// 3. the level rises above HEALTHY. Twelve streams of at least 100 ms offer over 8 requests a
		// second, the demo's capacity: the smoothed load passes WARNING's line (0.8) within a few
		// decisions, and the pressure's slower first tokens and 529s lower the score. The documented
		// rule bounds a rise from the score: the signal window gathering min-samples attempts (at most
		// the 10 s window), one decision, and rise-after (half the dwell); the usual slack on top.
		Duration rise = Duration.ofSeconds(10).plus(interval).plus(dwell.dividedBy(2)).plus(WAIT);
		new WebDriverWait(driver, rise, Duration.ofMillis(50)).until(d -> !"HEALTHY".equals(level(d)));

		// 4. the level the rest needs is pinned, not raced: under pressure alone the level moves with
		// the load, and shedding P2 lowers it. Held at DEGRADED, P2 is shed with 503 and Retry-After
		// while P0 is answered
		pinned = governor.hold(LoadLevel.DEGRADED);
		wait.until(d -> "DEGRADED".equals(level(d)));
		int before = answers.size();
		// (a P2 request let through before the hold may still end with its answer)
		Answer shed = Flux.interval(Duration.ofMillis(20))
			.flatMapIterable(tick -> since(answers, before))
			.filter(a -> a.status() == 503)
			.blockFirst(WAIT);
		assertThat(shed.priority()).as("only P2 is shed at DEGRADED").isEqualTo(Priority.P2);
		assertThat(Integer.parseInt(shed.retryAfter())).isPositive();
		assertThat(shed.body()).contains("\"error\":\"shed\"");
		int seen = answers.size();
		Answer p0 = Flux.interval(Duration.ofMillis(20))
			.flatMapIterable(tick -> since(answers, seen))
			.filter(a -> a.priority() == Priority.P0)
			.blockFirst(WAIT);
		assertThat(p0.status()).as("P0 is still served while P2 is shed").isEqualTo(200);
		assertThat(answers).allMatch(a -> a.status() != 503 || a.priority() == Priority.P2);

		// the page shows it too: a P2 question is refused before any answer starts (one local round
		// trip, the usual bound)
		new Select(driver.findElement(By.id("priority"))).selectByValue("P2");
		driver.findElement(By.id("prompt")).sendKeys("Is batch work welcome now?");
		driver.findElement(By.id("send")).click();
		WebElement settled = wait.until(d -> {
			List<WebElement> all = d.findElements(By.cssSelector("#messages .msg.assistant"));
			return all.isEmpty() ? null : first(all.get(all.size() - 1).findElements(By.cssSelector("[data-error], [data-source]")));
		});
		assertThat(settled.getDomAttribute("data-error")).as("a P2 question from the page while the level sheds P2")
			.isEqualTo("shed");
		assertThat(governor.state().held()).isTrue();
		assertThat(driver.findElement(By.id("load-line")).getDomAttribute("points")).isNotBlank();
		assertThat(driver.findElement(By.id("load-subscores")).getText()).contains("response-time", "error-rate");
		shoot("load-1-shedding");

		// 5. released, with the pressure off and the load gone, the level steps down to HEALTHY: the
		// pressure's evidence leaves the 10 s signal window, then one level per dwell (counted from the
		// hold) from DEGRADED, a decision each; the usual slack on top. P2 is answered again
		load.dispose();
		driver.findElement(By.id("fault-load")).click();
		wait.until(d -> mock.faults().loadPressure() == null);
		pinned.dispose();
		assertThat(governor.state().held()).isFalse();
		Duration recovery = Duration.ofSeconds(10).plus(dwell.multipliedBy(2)).plus(interval.multipliedBy(2)).plus(WAIT);
		new WebDriverWait(driver, recovery, Duration.ofMillis(50)).until(d -> "HEALTHY".equals(level(d)));
		Answer after = ask(web, Priority.P2, "And now?").block(WAIT);
		assertThat(after.status()).isEqualTo(200);
		assertThat(after.body()).contains("event:done");
		shoot("load-2-recovered");
	}

	/** @return the answers that arrived after the first {@code from} */
	private static List<Answer> since(ConcurrentLinkedQueue<Answer> answers, int from) {
		List<Answer> all = List.copyOf(answers);
		return all.subList(Math.min(from, all.size()), all.size());
	}

	private static Mono<Answer> ask(WebClient web, Priority priority, String question) {
		String body = "{\"priority\":\"" + priority + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + question + "\"}]}";
		return web.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON)
			.accept(MediaType.TEXT_EVENT_STREAM, MediaType.APPLICATION_JSON)
			.bodyValue(body)
			.exchangeToMono(response -> response.bodyToMono(String.class).defaultIfEmpty("")
				.map(text -> new Answer(priority, response.statusCode().value(),
						String.valueOf(response.headers().asHttpHeaders().getFirst("Retry-After")), text)))
			.timeout(WAIT);
	}

	private static String level(WebDriver d) {
		return d.findElement(By.id("load-level")).getDomAttribute("data-level");
	}

	private static WebElement first(List<WebElement> elements) {
		return elements.isEmpty() ? null : elements.get(0);
	}

	private void shoot(String name) throws IOException {
		chromium.shoot(name);
	}
}

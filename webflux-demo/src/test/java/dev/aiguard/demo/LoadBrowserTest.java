package dev.aiguard.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;

import dev.aiguard.core.Priority;
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
 * The load governor in a real browser, in a context of its own: a quick governor (250 ms
 * decisions, 2 s dwell, two warm-up intervals, a score from the model's time to first token and
 * error rate only) and a mock that answers in 100 ms. The page turns the mock's load pressure on,
 * the test offers concurrent P0 and P2 requests, the level rises, P2 is shed with 503 and
 * {@code Retry-After} while P0 is still answered; the page's "Errors 500" switch then holds the
 * level at CRITICAL while a P2 question from the page is shed; with the errors and the pressure off
 * and the load gone the level comes back to HEALTHY and P2 is answered again.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
		"aiguard.mock.first-token-delay=100ms",
		"aiguard.mock.token-interval=2ms",
		"aiguard.load.enabled=true",
		// the offered load alone never decides here: the model's answers do
		"aiguard.load.capacity=1000",
		"aiguard.load.interval=250ms",
		"aiguard.load.dwell=2s",
		"aiguard.load.warmup-intervals=2",
		"aiguard.load.signals.cpu=0",
		"aiguard.load.signals.memory=0",
		// the breaker stays out of it: refusals under pressure are the governor's to see
		"aiguard.breakers.model.failure-rate-threshold=1",
		"aiguard.breakers.model.minimum-calls=10000",
		"aiguard.policies.chat.retry.min-backoff=20ms",
		"aiguard.policies.chat.retry.max-backoff=100ms",
		"aiguard.fallback.timeout=1s" })
class LoadBrowserTest {

	/**
	 * The bound of every wait here: each step is a local round trip, an answer of a 100 ms mock, or a
	 * level change (decided every 250 ms; down from CRITICAL one level per 2 s dwell, 6 s). The rest
	 * is slack for a loaded 2-core machine, where twelve concurrent streams and the browser share it.
	 */
	private static final Duration WAIT = Duration.ofSeconds(30);

	@LocalServerPort
	int port;

	@Autowired
	MockModelServer mock;

	@Autowired
	LocalAccessFilter access;

	private Chromium chromium;
	private WebDriver driver;
	private Disposable load;

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
		mock.resetFaults();
		if (chromium != null) {
			chromium.close();
		}
	}

	/** One answer of {@code POST /api/chat}: its priority, status, {@code Retry-After} and body. */
	record Answer(Priority priority, int status, String retryAfter, String body) {
	}

	@Test
	void loadPressureRaisesTheLevelShedsBatchWorkThenRecovers() throws IOException {
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

		// 3. the level rises above HEALTHY, and P2 is shed with 503 and Retry-After while P0 is answered
		wait.until(d -> List.of("DEGRADED", "CRITICAL").contains(level(d)));
		Answer shed = Flux.interval(Duration.ofMillis(20))
			.flatMapIterable(tick -> List.copyOf(answers))
			.filter(a -> a.status() == 503)
			.blockFirst(WAIT);
		assertThat(shed.priority()).isEqualTo(Priority.P2);
		assertThat(Integer.parseInt(shed.retryAfter())).isPositive();
		assertThat(shed.body()).contains("\"error\":\"shed\"");
		int seen = answers.size();
		Answer p0 = Flux.interval(Duration.ofMillis(20))
			.flatMapIterable(tick -> {
				List<Answer> all = List.copyOf(answers);
				return all.subList(Math.min(seen, all.size()), all.size());
			})
			.filter(a -> a.priority() == Priority.P0)
			.blockFirst(WAIT);
		assertThat(p0.status()).as("P0 is still served while P2 is shed").isEqualTo(200);
		assertThat(answers).allMatch(a -> a.status() != 503 || a.priority() == Priority.P2);

		// the page shows it too: a P2 question is refused with the shed code. Shedding P2 lowers the
		// mock's load, so under pressure alone the level may step down to WARNING for a dwell and the
		// question race it. The governor has no way to pin a level, so the demo's own switch holds it:
		// with "Errors 500" every attempt fails at once, and the P0 load (never shed) ends attempts in
		// every 250 ms interval, so the error-rate score stays 0 and the level CRITICAL whatever P2 does
		driver.findElement(By.id("fault-errors")).click();
		wait.until(d -> mock.faults().errorRate() == 1.0);
		wait.until(d -> "CRITICAL".equals(level(d)));
		new Select(driver.findElement(By.id("priority"))).selectByValue("P2");
		driver.findElement(By.id("prompt")).sendKeys("Is batch work welcome now?");
		driver.findElement(By.id("send")).click();
		// a shed question is refused before any answer starts: one local round trip, the usual bound
		WebElement settled = wait.until(d -> {
			List<WebElement> all = d.findElements(By.cssSelector("#messages .msg.assistant"));
			return all.isEmpty() ? null : first(all.get(all.size() - 1).findElements(By.cssSelector("[data-error], [data-source]")));
		});
		assertThat(settled.getDomAttribute("data-error")).as("a P2 question from the page while the level sheds P2")
			.isEqualTo("shed");
		assertThat(level(driver)).as("the level held while the page asked").isEqualTo("CRITICAL");
		assertThat(driver.findElement(By.id("load-line")).getDomAttribute("points")).isNotBlank();
		assertThat(driver.findElement(By.id("load-subscores")).getText()).contains("response-time", "error-rate");
		shoot("load-1-shedding");

		// 4. errors and pressure off, load gone: one level per dwell (2 s) back to HEALTHY within the
		// usual bound, and P2 is answered again
		load.dispose();
		driver.findElement(By.id("fault-errors")).click();
		wait.until(d -> mock.faults().errorRate() == 0.0);
		driver.findElement(By.id("fault-load")).click();
		wait.until(d -> mock.faults().loadPressure() == null);
		wait.until(d -> "HEALTHY".equals(level(d)));
		Answer after = ask(web, Priority.P2, "And now?").block(WAIT);
		assertThat(after.status()).isEqualTo(200);
		assertThat(after.body()).contains("event:done");
		shoot("load-2-recovered");
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

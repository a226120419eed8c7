package dev.aiguard.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import dev.aiguard.test.mock.MockAnswers;
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
import org.openqa.selenium.support.ui.WebDriverWait;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The page in a real browser: Debian's headless Chromium driven through its own chromedriver
 * (never a downloaded one). It fails, rather than skips, when the browser is missing:
 * {@code .ci/run} installs {@code chromium} and {@code chromium-driver}.
 */
class BrowserTest extends DemoTestSupport {

	static final Path CHROMIUM = Path.of("/usr/bin/chromium");
	static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
	static final Path SHOTS = Path.of("target", "browser");

	private WebDriver driver;
	private Path profile;

	@BeforeEach
	void startBrowser() throws IOException {
		assertThat(CHROMEDRIVER).as("Debian's chromedriver; install it: apt-get install -y chromium chromium-driver")
			.isExecutable();
		assertThat(CHROMIUM).as("Debian's chromium; install it: apt-get install -y chromium chromium-driver")
			.isExecutable();
		// a driver path set up front means Selenium Manager is never asked to find (or download) one
		System.setProperty(ChromeDriverService.CHROME_DRIVER_EXE_PROPERTY, CHROMEDRIVER.toString());
		profile = Files.createTempDirectory("aiguard-chromium-");
		ChromeOptions options = new ChromeOptions();
		options.setBinary(CHROMIUM.toFile());
		options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
				"--user-data-dir=" + profile, "--window-size=1366,860");
		ChromeDriverService service = new ChromeDriverService.Builder()
			.usingDriverExecutable(CHROMEDRIVER.toFile())
			.usingAnyFreePort()
			.build();
		driver = new ChromeDriver(service, options);
		Files.createDirectories(SHOTS);
	}

	@AfterEach
	void stopBrowser() throws IOException {
		try {
			if (driver != null) {
				driver.quit();
			}
		}
		finally {
			try (Stream<Path> files = Files.walk(profile)) {
				files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
			}
		}
	}

	@Test
	void streamsAnAnswerThenShowsTheGuardKeepingThePageAliveWhenTheModelBreaks() throws IOException {
		faults(mock.faults().withPace(20, 40));       // slow enough to watch the tokens arrive
		driver.get("http://127.0.0.1:" + port + "/");
		WebDriverWait wait = new WebDriverWait(driver, WAIT, Duration.ofMillis(20));

		wait.until(d -> d.findElements(By.cssSelector("#lanes .lane")).size() == 3);
		assertThat(driver.findElement(By.id("breaker-state")).getDomAttribute("data-state")).isEqualTo("CLOSED");
		assertThat(driver.findElement(By.id("upstream")).getText()).isEqualTo("embedded mock model");
		wait.until(d -> mock.baseUrl().equals(d.findElement(By.id("mock-url")).getText()));

		// 1. tokens stream into the page, then the done event's source label appears
		String question = "How does the guard protect a stream?";
		type(question);
		WebElement answer = wait.until(d -> lastAnswer(d));
		wait.until(d -> answer.getDomAttribute("class").contains("streaming")
				&& !answer.findElement(By.className("text")).getText().isEmpty());
		String partial = answer.findElement(By.className("text")).getText();
		WebElement source = wait.until(d -> first(answer.findElements(By.className("source-label"))));
		assertThat(source.getDomAttribute("data-source")).isEqualTo("REALTIME");
		String full = answer.findElement(By.className("text")).getText();
		assertThat(full).isEqualTo(MockAnswers.text(question).strip());
		assertThat(partial.length()).as("text was shown while streaming").isLessThan(full.length());
		shoot("1-answer");

		// 2. a stall mid-answer: the guard ends it and the page says so, keeping the partial text
		driver.findElement(By.id("fault-stall")).click();
		wait.until(d -> Integer.valueOf(5).equals(mock.faults().stallAfterTokens()));
		type("Will this one stall?");
		WebElement stalled = wait.until(d -> first(lastAnswer(d).findElements(By.cssSelector(".error-label"))));
		assertThat(stalled.getDomAttribute("data-error")).isEqualTo("stalled");
		driver.findElement(By.id("fault-stall")).click();
		wait.until(d -> mock.faults().stallAfterTokens() == null);

		// 3. another fault switch reaches the mock
		driver.findElement(By.id("fault-errors")).click();
		wait.until(d -> mock.faults().errorRate() == 1.0 && mock.faults().errorStatus() == 500);
		wait.until(d -> d.findElement(By.id("fault-status")).getText().contains("1 fault"));

		// 4. failing answers open the breaker; the page keeps answering from the fallbacks
		String before = driver.findElement(By.id("breaker-state")).getDomAttribute("data-state");
		assertThat(before).isEqualTo("CLOSED");
		for (int i = 0; i < 4 && !"OPEN".equals(breakerState()); i++) {
			int answers = answers().size();
				type("question number " + i + " while the model is down");
			wait.until(d -> answers().size() == answers + 1 && ended(answers().get(answers)));
		}
		wait.until(d -> "OPEN".equals(breakerState()));
		WebElement fallback = answers().get(answers().size() - 1);
		WebElement label = wait.until(d -> first(fallback.findElements(By.className("source-label"))));
		assertThat(label.getDomAttribute("data-source")).isNotEqualTo("REALTIME");
		assertThat(driver.findElement(By.id("last-source")).getDomAttribute("data-source")).isNotEqualTo("REALTIME");

		shoot("2-breaker-open");

		// 5. the same question in a new chat is answered from the cache while the breaker is open
		driver.findElement(By.id("new-chat")).click();
		type(question);
		WebElement cached = wait.until(d -> lastAnswer(d));
		WebElement cachedSource = wait.until(d -> first(cached.findElements(By.className("source-label"))));
		assertThat(cachedSource.getDomAttribute("data-source")).isEqualTo("CACHE");
		assertThat(cached.findElement(By.className("text")).getText()).isEqualTo(full);
		wait.until(d -> d.findElements(By.cssSelector("#counters b")).size() > 0);
		Path shot = shoot("3-answered-from-cache");
		assertThat(Files.size(shot)).isPositive();
	}

	private void type(String question) {
		WebElement prompt = driver.findElement(By.id("prompt"));
		prompt.sendKeys(question);
		driver.findElement(By.id("send")).click();
	}

	private List<WebElement> answers() {
		return driver.findElements(By.cssSelector("#messages .msg.assistant"));
	}

	private static WebElement lastAnswer(WebDriver d) {
		List<WebElement> all = d.findElements(By.cssSelector("#messages .msg.assistant"));
		return all.isEmpty() ? null : all.get(all.size() - 1);
	}

	private static boolean ended(WebElement answer) {
		return !answer.findElements(By.className("meta")).isEmpty();
	}

	private String breakerState() {
		return driver.findElement(By.id("breaker-state")).getDomAttribute("data-state");
	}

	private static WebElement first(List<WebElement> elements) {
		return elements.isEmpty() ? null : elements.get(0);
	}

	private Path shoot(String name) throws IOException {
		Path target = SHOTS.resolve(name + ".png");
		Path file = ((TakesScreenshot) driver).getScreenshotAs(OutputType.FILE).toPath();
		Files.copy(file, target, StandardCopyOption.REPLACE_EXISTING);
		return target;
	}
}

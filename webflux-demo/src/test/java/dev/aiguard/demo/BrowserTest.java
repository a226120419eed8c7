package dev.aiguard.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;

import dev.aiguard.GuardControl;
import dev.aiguard.GuardPolicy;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Priority;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
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

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The page in a real browser ({@link Chromium}), opened at the address the demo prints at start
 * (its access token in the fragment). Every wait is on what the page shows; each bound is the
 * longest the step can take by the settings, with its reason next to it.
 */
class BrowserTest extends DemoTestSupport {

	private Chromium chromium;
	private WebDriver driver;

	@BeforeEach
	void startBrowser() throws IOException {
		chromium = new Chromium("1400,1000");
		driver = chromium.driver();
	}

	@AfterEach
	void stopBrowser() throws IOException {
		if (chromium != null) {
			chromium.close();
		}
	}

	@Autowired
	GuardControl<ChatChunk> libraryGuard;

	@Test
	void changesTheLivePolicyFromThePageAndShowsTheAuditTrail() throws IOException {
		GuardPolicy original = libraryGuard.policy();
		try {
			driver.get(access.pageAddress());
			WebDriverWait wait = new WebDriverWait(driver, WAIT, Duration.ofMillis(20));
			wait.until(d -> String.valueOf(original.stall().firstTokenTimeout().toMillis())
				.equals(d.findElement(By.id("policy-first-token")).getDomProperty("value")));
			WebElement firstToken = driver.findElement(By.id("policy-first-token"));
			firstToken.clear();
			firstToken.sendKeys("1300");
			WebElement p2 = driver.findElement(By.id("policy-p2-attempts"));
			p2.clear();
			p2.sendKeys("1");
			WebElement actor = driver.findElement(By.id("policy-actor"));
			actor.clear();
			actor.sendKeys("browser-test");
			driver.findElement(By.id("policy-apply")).click();

			// the trail is drawn anew at each poll: read the newest entry in one go
			String newest = wait.until(d -> {
				String text = String.valueOf(js("const li = document.querySelector('#policy-audit li');"
						+ " return li ? li.textContent : ''"));
				return text.contains("by browser-test") ? text : null;
			});
			assertThat(newest).contains("stall.firstTokenTimeout: " + original.stall().firstTokenTimeout()
					+ " → PT1.3S").contains("priority.P2.retry.maxAttempts: unset → 1");
			assertThat(libraryGuard.policy().stall().firstTokenTimeout()).isEqualTo(Duration.ofMillis(1300));
			assertThat(libraryGuard.policy().retry(Priority.P2).maxAttempts()).isEqualTo(1);
			assertThat(driver.findElement(By.id("policy-status")).getText()).endsWith("in force for new requests");
			shoot("policy");
		}
		finally {
			libraryGuard.replace("test-restore", original);
		}
	}

	@Test
	void streamsAnAnswerThenShowsTheGuardKeepingThePageAliveWhenTheModelBreaks() throws IOException {
		driver.get(access.pageAddress());
		WebDriverWait wait = new WebDriverWait(driver, WAIT, Duration.ofMillis(20));

		wait.until(d -> d.findElements(By.cssSelector("#lanes .lane")).size() == 3);
		assertThat(driver.findElement(By.id("breaker-state")).getDomAttribute("data-state")).isEqualTo("CLOSED");
		assertThat(driver.findElement(By.id("upstream")).getText()).isEqualTo("embedded mock model");
		checkTheChartScaleAndTheBreakerWaitWording();
		wait.until(d -> mock.baseUrl().equals(d.findElement(By.id("mock-url")).getText()));

		// 0. the client selector: one question through Spring AI's ChatClient, at the mock's quick pace
		Select clients = new Select(driver.findElement(By.id("client")));
		assertThat(clients.getFirstSelectedOption().getDomAttribute("value")).as("aiguard.chat.client").isEqualTo("library");
		clients.selectByValue("spring-ai");
		String viaSpringAi = "What does the advisor guard?";
		type(viaSpringAi);
		WebElement springAi = wait.until(d -> lastAnswer(d));
		WebElement springAiClient = wait.until(d -> first(springAi.findElements(By.className("client-label"))));
		assertThat(springAiClient.getDomAttribute("data-client")).isEqualTo("spring-ai");
		assertThat(springAi.findElement(By.className("source-label")).getDomAttribute("data-source")).isEqualTo("REALTIME");
		assertThat(springAi.findElement(By.className("text")).getText()).isEqualTo(MockAnswers.text(viaSpringAi).strip());
		wait.until(d -> d.findElement(By.id("counters")).getText().matches("(?s).*clients: .*spring-ai [1-9].*"));
		clients.selectByValue("library");
		driver.findElement(By.id("new-chat")).click();

		faults(mock.faults().withPace(20, 40));       // slow enough to watch the tokens arrive

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
		assertThat(answer.findElement(By.className("client-label")).getDomAttribute("data-client")).isEqualTo("library");
		assertThat(partial.length()).as("text was shown while streaming").isLessThan(full.length());
		// the load level, which decides where answers come from, is shown with them: the demo's governor is on
		assertThat(answer.findElement(By.className("load-label")).getDomAttribute("data-level")).isEqualTo("HEALTHY");
		assertThat(answer.findElements(By.className("why"))).as("the model answered").isEmpty();
		assertThat(answer.findElements(By.className("outcome-error"))).as("the page's own script fails nowhere").isEmpty();
		wait.until(d -> "load HEALTHY".equals(d.findElement(By.id("chat-load")).getText()));
		shoot("1-answer");

		// 2. a stall mid-answer: the guard ends it and the page says so, keeping the partial text
		driver.findElement(By.id("fault-stall")).click();
		wait.until(d -> Integer.valueOf(5).equals(mock.faults().stallAfterTokens()));
		type("Will this one stall?");
		WebElement stalled = wait.until(d -> first(lastAnswer(d).findElements(By.cssSelector(".error-label"))));
		assertThat(stalled.getDomAttribute("data-error")).isEqualTo("stalled");
		driver.findElement(By.id("fault-stall")).click();
		wait.until(d -> mock.faults().stallAfterTokens() == null);

		// two switches flipped in one go: both reach the server, and the page shows exactly its profile
		flipAtOnce("fault-drop", "fault-omit");
		wait.until(d -> mock.faults().dropAfterTokens() != null && mock.faults().omitTerminal()
				&& pageSwitches().equals(switchesOf(mock.faults())));
		flipAtOnce("fault-omit", "fault-drop");
		wait.until(d -> mock.faults().dropAfterTokens() == null && !mock.faults().omitTerminal()
				&& pageSwitches().equals(switchesOf(mock.faults())));
		// a change made elsewhere shows up at the next read
		faults(mock.faults().withContextLimit(120));
		wait.until(d -> d.findElement(By.id("fault-context")).isSelected());
		faults(mock.faults().withContextLimit(null));
		wait.until(d -> pageSwitches().equals(switchesOf(mock.faults())) && !pageSwitches().containsValue(true));

		// a looping answer: the repetition detector cuts it, the page says why, the counters show it INVALID
		driver.findElement(By.id("fault-loop")).click();
		wait.until(d -> mock.faults().loopingAnswer());
		type("Will this one loop?");
		WebElement looped = wait.until(d -> first(lastAnswer(d).findElements(By.cssSelector(".error-label"))));
		assertThat(looped.getDomAttribute("data-error")).isEqualTo("repetition");
		wait.until(d -> d.findElement(By.id("counters")).getText().contains("invalid "));
		driver.findElement(By.id("fault-loop")).click();
		wait.until(d -> !mock.faults().loopingAnswer() && pageSwitches().equals(switchesOf(mock.faults())));

		// 3. another fault switch reaches the mock
		driver.findElement(By.id("fault-errors")).click();
		wait.until(d -> mock.faults().errorRate() == 1.0 && mock.faults().errorStatus() == 500);
		wait.until(d -> d.findElement(By.id("fault-status")).getText().contains("1 fault"));

		// 4. failing answers open the breaker; the page keeps answering from the fallbacks. The
		// stalls above count in the breaker's window (and on a slow machine so may a slow first
		// Spring AI call): start this step from a closed tree with empty windows
		closeWithEmptyWindows(tree);
		wait.until(d -> "CLOSED".equals(breakerState()));
		WebDriverWait answered = new WebDriverWait(driver, noFirstTokenBound(), Duration.ofMillis(20));
		for (int i = 0; i < 4 && !"OPEN".equals(breakerState()); i++) {
			int answers = answers().size();
			type("question number " + i + " while the model is down");
			answered.until(d -> answers().size() == answers + 1 && ended(answers().get(answers)));
		}
		wait.until(d -> "OPEN".equals(breakerState()));
		// the first open lasts aiguard.breakers.model.open-wait (60 s here, and up to 10 % jitter), and the page counts it down
		String countdown = wait.until(d -> {
			String text = d.findElement(By.id("breaker-wait")).getText();
			return text.matches("OPEN — probe allowed in \\d+ s") ? text : null;
		});
		assertThat(Integer.parseInt(countdown.replaceAll("\\D", ""))).isBetween(1, 66);
		WebElement fallback = answers().get(answers().size() - 1);
		WebElement label = wait.until(d -> first(fallback.findElements(By.className("source-label"))));
		assertThat(label.getDomAttribute("data-source")).isNotEqualTo("REALTIME");
		assertThat(driver.findElement(By.id("last-source")).getDomAttribute("data-source")).isNotEqualTo("REALTIME");
		assertThat(fallback.findElement(By.className("why")).getText()).as("why the model's answer is not shown")
				.startsWith("why: ");

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

	@Test
	void theBreakerTreeShowsTheEndpointOpeningWhileTheSiblingAnswers() throws IOException {
		driver.get(access.pageAddress());
		WebDriverWait wait = new WebDriverWait(driver, WAIT, Duration.ofMillis(50));
		wait.until(d -> "CLOSED".equals(treeState("llm/mock/mock-large")) && "CLOSED".equals(treeState("llm/mock"))
				&& "CLOSED".equals(treeState("llm")) && "CLOSED".equals(treeState("llm/mock/mock-small")));

		driver.findElement(By.id("fault-primary-down")).click();
		wait.until(d -> mock.faults().failingModels().equals(Set.of(PRIMARY)));
		// an answer here goes through failed attempts, their backoffs and the ladder
		WebDriverWait answered = new WebDriverWait(driver, noFirstTokenBound(), Duration.ofMillis(50));
		for (int i = 0; i < 4 && breaker.state() != BreakerState.OPEN; i++) {
			int answers = answers().size();
			type("tree question " + i);
			answered.until(d -> answers().size() == answers + 1 && ended(answers().get(answers)));
		}
		// the page polls /api/guard every second: the tree's next drawing shows the endpoint open
		wait.until(d -> "OPEN".equals(treeState("llm/mock/mock-large")));
		assertThat(treeState("llm/mock")).as("one model down leaves its provider closed").isEqualTo("CLOSED");
		assertThat(treeState("llm/mock/mock-small")).isEqualTo("CLOSED");
		WebElement last = answers().get(answers().size() - 1);
		assertThat(last.findElement(By.className("source-label")).getDomAttribute("data-source"))
			.isEqualTo("FALLBACK_MODEL");
		assertThat(last.findElement(By.className("model-label")).getDomAttribute("data-model")).isEqualTo(SIBLING);
		assertThat(String.valueOf(js("return document.querySelector(\"#breaker-tree li[data-breaker='llm/mock/mock-small']"
				+ " .tree-counts\").textContent"))).matches(" endpoint, [1-9]\\d* calls?, 0 % failed");
		shoot("4-tree-primary-down");

		driver.findElement(By.id("fault-primary-down")).click();
		wait.until(d -> mock.faults().failingModels().isEmpty() && !d.findElement(By.id("fault-primary-down")).isSelected());
	}

	@Test
	void theTrialTenantIsRefusedOnThePageAndTheBudgetsCardShowsItsBucket() throws IOException {
		driver.get(access.pageAddress());
		WebDriverWait wait = new WebDriverWait(driver, WAIT, Duration.ofMillis(50));
		wait.until(d -> d.findElements(By.cssSelector("#lanes .lane")).size() == 3);
		WebElement tenant = driver.findElement(By.id("tenant"));
		tenant.clear();
		tenant.sendKeys("trial");

		// the trial tenant has three requests a minute: the fourth question is refused before it starts
		for (int i = 1; i <= 4; i++) {
			int answers = answers().size();
			type("trial question " + i);
			wait.until(d -> answers().size() == answers + 1 && ended(answers().get(answers)));
		}
		List<WebElement> all = answers();
		assertThat(all.get(2).findElements(By.cssSelector("[data-error]"))).as("the third is answered").isEmpty();
		WebElement refused = all.get(3);
		assertThat(refused.findElement(By.cssSelector("[data-error]")).getDomAttribute("data-error")).isEqualTo("budget");
		assertThat(refused.getText()).contains("trial").containsPattern("retry in \\d+ s");
		assertThat(modelRequests()).as("the refused question never reached the model").hasSize(3);

		// the card is drawn at the next poll: the trial tenant's request bucket, spent (already so after
		// the third question, so the row alone does not show that a poll after the refusal came), and
		// the refusal, which only a poll after the fourth question shows
		wait.until(d -> {
			List<WebElement> rows = d.findElements(By.cssSelector("#budgets .budget[data-budget='tenant:trial:requests']"));
			return !rows.isEmpty() && rows.get(0).getText().contains("0 / 3");
		});
		wait.until(d -> "1".equals(d.findElement(By.id("budget-tenant-refusals")).getText()));
		assertThat(driver.findElement(By.id("budgets-card")).isDisplayed()).isTrue();
		shoot("5-budgets");
	}

	/**
	 * The bound of a wait for an answer whose model gives no first token (it fails, or is down):
	 * the longest the guard may take to end it by the library client's policy — each attempt up to
	 * its first-token deadline, then the longest wait before the next (its backoff, or a server's
	 * {@code Retry-After} up to the cap), then each rung of the ladder up to its timeout. The page
	 * asks one question at a time, so nothing queues in its lane. {@link #WAIT} on top: the page's
	 * round trip and drawing, and slack for a loaded 2-core machine, where the server's threads and
	 * the browser's wait for a core. An answer that takes longer is a finding, not a slow machine.
	 */
	private Duration noFirstTokenBound() {
		GuardPolicy policy = libraryGuard.policy();
		RetryRules retry = policy.retry(Priority.P1);
		Duration longestWait = retry.maxBackoff().compareTo(retry.maxRetryAfter()) >= 0 ? retry.maxBackoff()
				: retry.maxRetryAfter();
		Duration attempts = policy.stall(Priority.P1).firstTokenTimeout().plus(longestWait)
			.multipliedBy(retry.maxAttempts());
		FallbackChain<?> ladder = Objects.requireNonNull(policy.fallback(), "the demo's ladder");
		Duration rungs = ladder.timeout().orElseThrow().multipliedBy(ladder.steps().size());
		return attempts.plus(rungs).plus(WAIT);
	}

	/** @return the state the page's tree shows for a breaker, read in one go (the list is redrawn every second) */
	private String treeState(String breakerName) {
		Object state = js("const li = document.querySelector(\"#breaker-tree li[data-breaker='\" + arguments[0] + \"']\");"
				+ " return li ? li.dataset.state : null", breakerName);
		return state == null ? null : state.toString();
	}

	/** The page's pure functions, called in the page: the chart's scale and the breaker's wait in words. */
	private void checkTheChartScaleAndTheBreakerWaitWording() {
		// one slow answer among quick ones is clipped instead of setting the scale
		List<Object> quick = new ArrayList<>(Collections.nCopies(39, 300L));
		quick.add(6000L);
		assertThat(scale(quick)).isEqualTo(Map.of("top", 1000L, "clipped", 1L));
		assertThat(js("return AiGuardDemo.barHeight(6000, 1000, 66)")).isEqualTo(Map.of("height", 66L, "clipped", true));
		assertThat(js("return AiGuardDemo.barHeight(300, 1000, 60)")).isEqualTo(Map.of("height", 18L, "clipped", false));
		assertThat(js("return AiGuardDemo.barHeight(null, 1000, 60)")).isEqualTo(Map.of("height", 3L, "clipped", false));
		// an outlier is judged against the 90th percentile: twice it is the most the scale stretches
		List<Object> mixed = new ArrayList<>(Collections.nCopies(38, 1500L));
		mixed.add(2000L);
		mixed.add(30_000L);
		assertThat(scale(mixed)).isEqualTo(Map.of("top", 3000L, "clipped", 1L));
		// a slow half is not an outlier, nor is anything when all are slow, or with too few to tell
		List<Object> half = new ArrayList<>(Collections.nCopies(20, 300L));
		half.addAll(Collections.nCopies(20, 4000L));
		assertThat(scale(half)).isEqualTo(Map.of("top", 4000L, "clipped", 0L));
		assertThat(scale(List.of(13_000L, 13_200L, 12_900L))).isEqualTo(Map.of("top", 13_200L, "clipped", 0L));
		assertThat(scale(List.of(300L, 6000L))).isEqualTo(Map.of("top", 6000L, "clipped", 0L));
		// no time to first token (failures, rejections) and nothing at all: the one-second floor
		assertThat(scale(Arrays.asList(null, null, 200L))).isEqualTo(Map.of("top", 1000L, "clipped", 0L));
		assertThat(scale(List.of())).isEqualTo(Map.of("top", 1000L, "clipped", 0L));

		assertThat(waitText("{state: 'OPEN', retryInMs: 12000}")).isEqualTo("OPEN — probe allowed in 12 s");
		assertThat(waitText("{state: 'OPEN', retryInMs: 11001}")).as("rounded up").isEqualTo("OPEN — probe allowed in 12 s");
		assertThat(waitText("{state: 'OPEN', retryInMs: 1}")).isEqualTo("OPEN — probe allowed in 1 s");
		assertThat(waitText("{state: 'OPEN', retryInMs: 0}")).isEqualTo("OPEN — next request probes");
		assertThat(waitText("{state: 'HALF_OPEN', nextOpenWaitMs: 30000}"))
			.isEqualTo("HALF OPEN — probing; a failed probe re-opens it for 30 s");
		assertThat(waitText("{state: 'CLOSED', nextOpenWaitMs: 15000, openWaitBackoff: {initialMs: 15000}}"))
			.isEqualTo("a trip would open it for 15 s");
		assertThat(waitText("{state: 'CLOSED', nextOpenWaitMs: 60000, openWaitBackoff: {initialMs: 15000}}"))
			.isEqualTo("a trip would open it for 60 s (it re-opened recently)");
		// jitter lengthens a first wait too: that is no streak
		assertThat(waitText("{state: 'CLOSED', nextOpenWaitMs: 16400, openWaitBackoff: {initialMs: 15000, jitter: 0.1}}"))
			.isEqualTo("a trip would open it for 17 s");
		assertThat(waitText("{state: 'CLOSED', nextOpenWaitMs: 30100, openWaitBackoff: {initialMs: 15000, jitter: 0.1}}"))
			.isEqualTo("a trip would open it for 31 s (it re-opened recently)");
	}

	private Object js(String script, Object... args) {
		return ((JavascriptExecutor) driver).executeScript(script, args);
	}

	private Object scale(List<?> ttfts) {
		return js("return AiGuardDemo.chartScale(arguments[0])", ttfts);
	}

	private Object waitText(String breaker) {
		return js("return AiGuardDemo.breakerWaitText(" + breaker + ")");
	}

	/** Clicks the switches in one script, so their changes leave the page together. */
	private void flipAtOnce(String... ids) {
		StringBuilder script = new StringBuilder();
		for (String id : ids) {
			script.append("document.getElementById('").append(id).append("').click();");
		}
		js(script.toString());
	}

	private static final List<String> SWITCHES = List.of("fault-slow", "fault-stall", "fault-drop", "fault-omit",
			"fault-errors", "fault-context", "fault-load", "fault-empty", "fault-filter", "fault-loop",
			"fault-primary-down", "fault-models-down", "fault-rate-limit");

	private Map<String, Boolean> pageSwitches() {
		Map<String, Boolean> on = new LinkedHashMap<>();
		for (String id : SWITCHES) {
			on.put(id, driver.findElement(By.id(id)).isSelected());
		}
		return on;
	}

	/** @return the switches a profile stands for, as the page draws them */
	private static Map<String, Boolean> switchesOf(FaultProfile p) {
		Map<String, Boolean> on = new LinkedHashMap<>();
		on.put("fault-slow", p.firstTokenDelayMs() == 6000);
		on.put("fault-stall", p.stallAfterTokens() != null);
		on.put("fault-drop", p.dropAfterTokens() != null);
		on.put("fault-omit", p.omitTerminal());
		on.put("fault-errors", p.errorRate() > 0);
		on.put("fault-context", p.contextLimitTokens() != null);
		on.put("fault-load", p.loadPressure() != null);
		on.put("fault-empty", p.emptyAnswer());
		on.put("fault-filter", "content_filter".equals(p.finishReason()));
		on.put("fault-loop", p.loopingAnswer());
		boolean everyModel = p.failingModels().containsAll(List.of(PRIMARY, SIBLING));
		on.put("fault-primary-down", !everyModel && p.failsModel(PRIMARY));
		on.put("fault-models-down", everyModel);
		on.put("fault-rate-limit", p.providerRateLimit() != null);
		return on;
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
		return chromium.shoot(name);
	}
}

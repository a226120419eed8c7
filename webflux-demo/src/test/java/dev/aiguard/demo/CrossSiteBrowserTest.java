package dev.aiguard.demo;

import java.io.IOException;
import java.time.Duration;
import java.util.List;

import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.core.Priority;
import dev.aiguard.test.mock.FaultProfile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Another site's page, in a real browser, tries what any page the user visits could: a
 * {@code text/plain} fetch and two form posts (no preflight needed for either) that would ask the
 * chat a question on the user's key, a JSON fetch that needs a preflight, a fault change and a
 * lane shut through Actuator. The page is served by a second small server on another loopback
 * port, so the browser sends its own origin. None of it reaches the model or changes anything.
 */
class CrossSiteBrowserTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	@Autowired
	AiGuardRegistry registry;

	private Chromium chromium;
	private DisposableServer otherSite;

	@BeforeEach
	void startBrowserAndTheOtherSite() throws IOException {
		chromium = new Chromium("1200,800");
		otherSite = HttpServer.create()
			.host("127.0.0.1")
			.port(0)
			.route(routes -> routes.get("/", (request, response) -> response
				.header("Content-Type", "text/html; charset=utf-8")
				.sendString(Mono.just(page("http://127.0.0.1:" + port)))))
			.bindNow();
	}

	@AfterEach
	void stop() throws IOException {
		if (otherSite != null) {
			otherSite.disposeNow();
		}
		if (chromium != null) {
			chromium.close();
		}
	}

	@Test
	void aPageOfAnotherOriginCannotAskTheChatNorChangeTheDemo() throws IOException {
		// the page would spend the default tenant's budget: compare it afterwards
		JsonNode budgetsBefore = budgets();
		long requestsBefore = stats.requests();
		FaultProfile faultsBefore = mock.faults();
		int p0 = registry.lanes().orElseThrow().concurrency(Priority.P0);

		WebDriver driver = chromium.driver();
		driver.get("http://127.0.0.1:" + otherSite.port() + "/");
		// each attempt notes when the browser is done with it (an answer, a refused preflight, the
		// frame a form posted into loaded): no attempt is still on its way when the demo is read.
		// The bound is the usual one: every attempt is one local round trip, none waits for a model
		WebDriverWait wait = new WebDriverWait(driver, WAIT, Duration.ofMillis(50));
		List<WebElement> settled = wait.until(d -> {
			List<WebElement> done = d.findElements(By.cssSelector("#settled li"));
			return done.size() == ATTEMPTS.size() ? done : null;
		});
		assertThat(settled).extracting(li -> li.getDomAttribute("data-attempt"))
			.containsExactlyInAnyOrderElementsOf(ATTEMPTS);
		chromium.shoot("cross-site");
		String how = driver.findElement(By.id("settled")).getText();

		// by content: a warm-up attempt the guard gave up on may reach the mock late, and is no concern here
		assertThat(mock.requests()).as("no question of the other page reached the model; the page saw %s", how)
			.noneMatch(r -> r.body().contains("a cross-site question") || r.body().contains("a form question"));
		assertThat(stats.requests()).as("the guard answered no request").isEqualTo(requestsBefore);
		assertThat(budgets()).as("no budget was spent").isEqualTo(budgetsBefore);
		assertThat(mock.faults()).as("the faults are as they were").isEqualTo(faultsBefore);
		assertThat(registry.lanes().orElseThrow().concurrency(Priority.P0)).as("the P0 lane is open").isEqualTo(p0);
	}

	/** The attempts of the other site's page, by the name each notes when settled. */
	private static final List<String> ATTEMPTS = List.of("fetch-text-plain", "fetch-json", "fetch-faults",
			"fetch-actuator-lane", "form-text-plain", "form-urlencoded");

	/** @return the other site's page, which tries its attempts at once on load */
	private static String page(String demo) {
		return """
				<!doctype html>
				<html><head><title>another site</title></head><body>
				<h1>Any page the user visits</h1>
				<ul id="settled"></ul>
				<!-- a text/plain form builds a JSON body: name + '=' + value -->
				<form id="plain" method="post" enctype="text/plain" action="DEMO/api/chat" target="plain-sink">
				  <input name='{"messages":[{"role":"user","content":"a form question"}],"pad":"' value='"}'>
				</form>
				<iframe name="plain-sink"></iframe>
				<form id="urlencoded" method="post" action="DEMO/api/chat" target="urlencoded-sink">
				  <input name="messages" value="a form question">
				</form>
				<iframe name="urlencoded-sink"></iframe>
				<script>
				  const demo = 'DEMO';
				  const question = JSON.stringify({ messages: [{ role: 'user', content: 'a cross-site question' }] });
				  function settled(name, how) {
				    const li = document.createElement('li');
				    li.dataset.attempt = name;
				    li.dataset.how = how;
				    li.textContent = name + ': ' + how;
				    document.getElementById('settled').appendChild(li);
				  }
				  function attempt(name, url, init) {
				    fetch(url, init).then((r) => settled(name, 'answered ' + r.status + ' ' + r.type),
				        (e) => settled(name, 'failed: ' + e));
				  }
				  // no preflight: the browser sends these as they are, and cannot read the answer
				  attempt('fetch-text-plain', demo + '/api/chat',
				      { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: question });
				  attempt('fetch-actuator-lane', demo + '/actuator/aiguard/lanes/p0',
				      { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: '{"capacity":0}' });
				  // a preflight first: JSON, and a PATCH
				  attempt('fetch-json', demo + '/api/chat',
				      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: question });
				  attempt('fetch-faults', demo + '/api/faults',
				      { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: '{"errorRate":1.0}' });
				  for (const id of ['plain', 'urlencoded']) {
				    const form = document.getElementById(id);
				    document.querySelector('iframe[name="' + form.target + '"]')
				        .addEventListener('load', () => settled('form-' + (id === 'plain' ? 'text-plain' : 'urlencoded'), 'loaded'));
				    form.submit();
				  }
				</script>
				</body></html>
				""".replace("DEMO", demo);
	}

	private JsonNode budgets() {
		byte[] body = client.get().uri("/api/guard").exchange().expectStatus().isOk().expectBody().returnResult()
			.getResponseBody();
		return json.readTree(body).get("budgets");
	}
}

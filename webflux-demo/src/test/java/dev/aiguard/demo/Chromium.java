package dev.aiguard.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.stream.Stream;

import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Debian's headless Chromium driven through its own chromedriver (never a downloaded one), with a
 * profile of its own that {@link #close()} deletes. It fails, rather than skips, when the browser
 * is missing: {@code .ci/run} installs {@code chromium} and {@code chromium-driver}.
 */
final class Chromium implements AutoCloseable {

	static final Path CHROMIUM = Path.of("/usr/bin/chromium");
	static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
	static final Path SHOTS = Path.of("target", "browser");

	private final WebDriver driver;
	private final Path profile;

	/** @param windowSize e.g. {@code 1366,860} */
	Chromium(String windowSize) throws IOException {
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
				"--user-data-dir=" + profile, "--window-size=" + windowSize);
		driver = new ChromeDriver(new ChromeDriverService.Builder()
			.usingDriverExecutable(CHROMEDRIVER.toFile())
			.usingAnyFreePort()
			.build(), options);
		Files.createDirectories(SHOTS);
	}

	WebDriver driver() {
		return driver;
	}

	/** @return the screenshot's file under {@code target/browser} */
	Path shoot(String name) throws IOException {
		Path target = SHOTS.resolve(name + ".png");
		Path file = ((TakesScreenshot) driver).getScreenshotAs(OutputType.FILE).toPath();
		Files.copy(file, target, StandardCopyOption.REPLACE_EXISTING);
		return target;
	}

	@Override
	public void close() throws IOException {
		try {
			driver.quit();
		}
		finally {
			try (Stream<Path> files = Files.walk(profile)) {
				files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
			}
		}
	}
}

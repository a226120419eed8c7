package dev.aiguard.demo;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/**
 * The reactor-ai-guard demo: a guarded streaming chat endpoint in front of an embedded mock model
 * that fails on request, and a page that shows the guard at work.
 *
 * <pre>{@code
 * mvn -B -ntp -pl webflux-demo -am package -DskipTests
 * java -jar webflux-demo/target/webflux-demo.jar        # then open http://127.0.0.1:8080/
 * }</pre>
 */
@SpringBootApplication
@EnableConfigurationProperties(DemoProperties.class)
public class DemoApplication {

	public static void main(String[] args) {
		SpringApplication.run(DemoApplication.class, args);
	}
}

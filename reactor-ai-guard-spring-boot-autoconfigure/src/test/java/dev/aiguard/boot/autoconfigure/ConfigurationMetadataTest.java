package dev.aiguard.boot.autoconfigure;

import java.beans.PropertyDescriptor;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.aiguard.boot.autoconfigure.properties.BreakerProperties;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.context.properties.bind.DataObjectPropertyName;
import org.springframework.boot.configurationprocessor.json.JSONArray;
import org.springframework.boot.configurationprocessor.json.JSONException;
import org.springframework.boot.configurationprocessor.json.JSONObject;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The metadata Boot's configuration processor writes (IDE completion and descriptions) reaches every
 * key of the capability classes {@link AiGuardProperties} holds. Those classes live in a package of
 * their own, where the processor descends into them only through {@code @NestedConfigurationProperty};
 * a holder field without it would drop its keys from the metadata while binding still works.
 */
class ConfigurationMetadataTest {

	private static final Package CAPABILITIES = BreakerProperties.class.getPackage();

	@Test
	void everyKeyOfTheHeldCapabilitiesIsDescribed() throws IOException, URISyntaxException, JSONException {
		Map<String, String> described = describedProperties();
		List<String> expected = new ArrayList<>();
		keys(AiGuardProperties.PREFIX, AiGuardProperties.class, expected);
		assertThat(expected).contains("aiguard.lanes.p0.concurrency", "aiguard.budgets.provider.key",
				"aiguard.load.forecast.alpha", "aiguard.breaker-tree.providers", "aiguard.retry-budget.ratio");
		assertThat(described.keySet()).containsAll(expected);
		expected.forEach(key -> assertThat(described.get(key)).as(key).isNotBlank());
	}

	/**
	 * The value hints (closed sets of strings, map keys with known names) name keys the metadata
	 * describes, and every hinted value of a plain key is one the starter accepts.
	 */
	@Test
	void everyHintNamesADescribedKeyAndItsValuesAreAccepted() throws IOException, URISyntaxException, JSONException {
		Map<String, String> described = describedProperties();
		JSONArray hints = metadata().getJSONArray("hints");
		List<String> hinted = new ArrayList<>();
		for (int i = 0; i < hints.length(); i++) {
			JSONObject hint = hints.getJSONObject(i);
			String name = hint.getString("name");
			hinted.add(name);
			String key = name.replaceFirst("\\.(keys|values)$", "");
			assertThat(described).as(name).containsKey(key);
			JSONArray values = hint.getJSONArray("values");
			assertThat(values.length()).as(name).isGreaterThan(1);
			for (int v = 0; v < values.length() && key.equals(name); v++) {
				String value = values.getJSONObject(v).getString("value");
				new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class))
					.withPropertyValues(key + "=" + value)
					.run(context -> assertThat(context).as(key + "=" + value).hasNotFailed());
			}
		}
		assertThat(hinted).contains("aiguard.budgets.on-prompt-over-cap", "aiguard.load.signals.keys",
				"aiguard.budgets.reserves.keys", "aiguard.load.rules.keys");
	}

	/** Collects the keys of a bound class, descending into the capability classes and their nested ones. */
	private static void keys(String prefix, Class<?> type, List<String> into) {
		for (PropertyDescriptor property : BeanUtils.getPropertyDescriptors(type)) {
			if (property.getWriteMethod() == null) {
				continue;
			}
			String key = prefix + "." + DataObjectPropertyName.toDashedForm(property.getName());
			Class<?> value = property.getPropertyType();
			if (value.getPackage() == CAPABILITIES && !value.isEnum()) {
				keys(key, value, into);
			}
			else {
				into.add(key);
			}
		}
	}

	/**
	 * Reads the main classes' file (the test classes have one of their own) with the processor's own
	 * JSON reader, as the module's tests have no other JSON library.
	 */
	private static Map<String, String> describedProperties() throws IOException, URISyntaxException, JSONException {
		JSONArray properties = metadata().getJSONArray("properties");
		Map<String, String> described = new HashMap<>();
		for (int i = 0; i < properties.length(); i++) {
			JSONObject property = properties.getJSONObject(i);
			described.put(property.getString("name"), property.optString("description"));
		}
		return described;
	}

	private static JSONObject metadata() throws IOException, URISyntaxException, JSONException {
		Path classes = Path.of(AiGuardProperties.class.getProtectionDomain().getCodeSource().getLocation().toURI());
		Path file = classes.resolve("META-INF/spring-configuration-metadata.json");
		assertThat(file).as("the generated configuration metadata").exists();
		return new JSONObject(Files.readString(file));
	}
}

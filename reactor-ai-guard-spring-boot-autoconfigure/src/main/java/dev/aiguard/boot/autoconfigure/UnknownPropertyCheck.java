package dev.aiguard.boot.autoconfigure;

import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.annotation.AnnotatedBeanDefinition;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.annotation.MergedAnnotation;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.env.Environment;
import org.springframework.core.type.MethodMetadata;
import org.springframework.util.ClassUtils;

/**
 * Fails startup on a key under {@code aiguard.*} that no bound class knows, naming it and the
 * nearest known key, before any guard is built. The known names are those of this module's
 * property classes and of every {@code @ConfigurationProperties} bean of the context bound under
 * {@code aiguard} (an application may keep settings of its own there, as the demo does).
 */
final class UnknownPropertyCheck implements BeanFactoryPostProcessor {

	private final Environment environment;

	UnknownPropertyCheck(Environment environment) {
		this.environment = environment;
	}

	@Override
	public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
		KnownProperties known = new KnownProperties();
		KnownProperties.OWN.forEach(known::add);
		ClassLoader loader = beanFactory.getBeanClassLoader();
		for (String name : beanFactory.getBeanDefinitionNames()) {
			BeanDefinition definition = beanFactory.getBeanDefinition(name);
			MergedAnnotation<ConfigurationProperties> annotation = MergedAnnotation.missing();
			String typeName = definition.getBeanClassName();
			if (definition instanceof AnnotatedBeanDefinition annotated && annotated.getFactoryMethodMetadata() != null) {
				MethodMetadata method = annotated.getFactoryMethodMetadata();
				annotation = method.getAnnotations().get(ConfigurationProperties.class);
				typeName = method.getReturnTypeName();
			}
			Class<?> type = load(typeName, loader);
			if (type == null) {
				continue;
			}
			if (!annotation.isPresent()) {
				annotation = MergedAnnotations.from(type).get(ConfigurationProperties.class);
			}
			if (annotation.isPresent()) {
				String prefix = annotation.getString("prefix");
				ConfigurationPropertyName bound = ConfigurationPropertyName.adapt(prefix, '.');
				if (bound.equals(KnownProperties.ROOT) || KnownProperties.ROOT.isAncestorOf(bound)) {
					known.add(prefix, type);
				}
			}
		}
		known.check(ConfigurationPropertySources.get(environment));
	}

	private static @Nullable Class<?> load(@Nullable String typeName, @Nullable ClassLoader loader) {
		if (typeName == null) {
			return null;
		}
		try {
			return ClassUtils.forName(typeName, loader);
		}
		catch (ClassNotFoundException | LinkageError e) {
			// a bean whose class cannot load here binds nothing this check could read
			return null;
		}
	}
}
